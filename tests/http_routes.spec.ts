import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner } from '../src/runner/contract.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { jsonClient, postJson, runInput, serveApp } from './helpers/http.js'
import { assertConforms, parseSse } from './helpers/agui.js'

async function setup(runner: AgentRunner) {
  const served = await serveApp({ runner })
  await resetTables(await served.app.container.make('lucid.db'))
  const call = jsonClient(served.url)
  return { ...served, call }
}

test.group('Routes: native stream, decisions, names', () => {
  test('registerRoutes mounts named, prefixed routes', async ({ assert }) => {
    const { app } = await setup(scriptedAgent())
    const router = await app.container.make('router')
    const names = router.toJSON().root.map((route: any) => route.name)
    for (const name of [
      'agentStream.agui.run',
      'agentStream.agui.reattach',
      'agentStream.agui.attach',
      'agentStream.chat.send',
      'agentStream.chat.resume',
      'agentStream.runs.start',
      'agentStream.runs.stream',
      'agentStream.runs.cancel',
      'agentStream.items.approve',
      'agentStream.items.reject',
      'agentStream.items.answer',
      'agentStream.admin.page',
      'agentStream.admin.items',
      'agentStream.admin.item',
      'agentStream.admin.history',
      'agentStream.admin.events',
      'agentStream.admin.decide',
    ]) {
      assert.include(names, name)
    }
  })

  test('native: start a run, read it as SSE from a cursor, 404 for a missing or foreign run', async ({
    assert,
  }) => {
    const { call, agentStream } = await setup(scriptedAgent({ steps: ['read'] }))
    const started = await call('POST', '/runs', { message: 'go' })
    assert.equal(started.status, 201)
    const { runId } = started.json
    await agentStream.driver.settled()
    const full = await call('GET', `/runs/${runId}/stream`)
    assert.equal(full.headers.get('content-type'), 'text/event-stream; charset=utf-8')
    const frames = parseSse(full.text)
    assert.isAbove(frames.length, 3)
    assert.isTrue(frames.every((f) => f.id))
    const middle = frames[2].id!
    const rest = parseSse((await call('GET', `/runs/${runId}/stream?after=${middle}`)).text)
    assert.deepEqual(
      rest.map((f) => f.event),
      frames.slice(3).map((f) => f.event)
    )
    assert.equal((await call('GET', `/runs/${runId}/stream`, undefined, 'mallory')).status, 404)
    assert.equal((await call('GET', `/runs/nope/stream`)).status, 404)
    const bad = await call('POST', '/runs', { message: '' })
    assert.equal(bad.status, 422)
  })

  test('decisions: approve continues the run; typed errors map to 404/409/422', async ({
    assert,
  }) => {
    const { call, agentStream } = await setup(scriptedAgent({ steps: ['approval', 'question'] }))
    const { runId } = (await call('POST', '/runs', { message: 'go' })).json
    await agentStream.driver.settled()
    const [item] = await agentStream.parking.queries.list({ streamRunId: runId })
    const path = `/items/${item.runId}/${item.itemId}`
    // Another person's item answers exactly as a missing one (403: tests/decide_access.spec.ts).
    const foreign = await call('POST', `${path}/approve`, {}, 'mallory')
    const missing = await call('POST', `/items/${item.runId}/nope/approve`, {})
    assert.equal(foreign.status, 404)
    assert.equal(missing.status, 404)
    assert.deepEqual(foreign.json, missing.json)
    const mismatch = await call('POST', `${path}/answer`, { answers: {} })
    assert.equal(mismatch.status, 422)
    assert.equal(mismatch.json.code, 'E_DECISION_MISMATCH')
    const ok = await call('POST', `${path}/approve`, { reason: 'fine' })
    assert.deepEqual(ok.json, { status: 'approved' })
    assert.equal((await call('POST', `${path}/reject`, {})).status, 409)
    await agentStream.driver.settled()
    // The run went on and parked on the question set.
    const [question] = await agentStream.parking.queries.list({ streamRunId: runId })
    assert.equal(question.kind, 'elicitation')
    const invalid = await call('POST', `/items/${question.runId}/${question.itemId}/answer`, {
      answers: { nope: ['x'] },
    })
    assert.equal(invalid.status, 422)
    const cancel = await call('POST', `/runs/${runId}/cancel`)
    assert.deepEqual(cancel.json, { status: 'cancelled' })
    // Who decided never reaches a reader of the native stream.
    const stream = await call('GET', `/runs/${runId}/stream`)
    assert.include(stream.text, 'approval-settled')
    assert.notInclude(stream.text, 'decidedBy')
    assert.notInclude(stream.text, 'alice')
  })

  test('AG-UI attach by thread: a run approved elsewhere continues as its own AG-UI run', async ({
    assert,
  }) => {
    const { call, agentStream } = await setup(scriptedAgent({ steps: ['approval'] }))
    const threadId = `t-${randomUUID()}`
    const first = await call('POST', '/agui', {
      threadId,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: 'go' }],
    })
    const interrupt = parseSse(first.text).at(-1)!.event.outcome.interrupts[0]
    const parkedView = parseSse((await call('GET', `/agui/threads/${threadId}`)).text).map(
      (e) => e.event
    )
    assert.equal(parkedView.at(-1)!.outcome.type, 'interrupt')
    const [item] = await agentStream.parking.queries.list({ threadId })
    assert.equal(
      (await call('POST', `/items/${item.runId}/${item.itemId}/approve`, {})).status,
      200
    )
    await agentStream.driver.settled()
    const attached = parseSse((await call('GET', `/agui/threads/${threadId}`)).text).map(
      (e) => e.event
    )
    await assertConforms(assert, attached)
    assert.deepEqual(attached.at(-1)!.outcome, { type: 'success' })
    const result = attached.find((e) => e.type === 'TOOL_CALL_RESULT')!
    assert.equal(result.toolCallId, interrupt.toolCallId)
    // The same run id on a second attach (derived, not random).
    const again = parseSse((await call('GET', `/agui/threads/${threadId}`)).text)
    assert.equal(again[0].event.runId, attached[0].runId)
    assert.equal((await call('GET', `/agui/threads/${threadId}`, undefined, 'mallory')).status, 404)
  })
})

test.group('Routes: what a review found', () => {
  test('native frames follow the door rules: no reasoning, tool error text or thrown text', async ({
    assert,
  }) => {
    const leaky: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({ t: 'event', event: { kind: 'reasoning', text: 'secret plan' } })
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'tool-input-available', id: 'c', name: 'x', input: {}, toolKind: 'read' },
        })
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'tool-output-error', id: 'c', error: 'secret stack at /srv/app.ts' },
        })
        await ctx.writer.write({ t: 'error', code: 'quota_exceeded', message: 'secret sk-live-1' })
        return { status: 'finished' }
      },
      async resume() {
        return { status: 'finished' }
      },
    }
    const { call, agentStream } = await setup(leaky)
    const { runId } = (await call('POST', '/runs', { message: 'go' })).json
    await agentStream.driver.settled()
    const stream = await call('GET', `/runs/${runId}/stream`)
    assert.notInclude(stream.text, 'secret')
    assert.include(stream.text, 'The tool call failed.')
    assert.include(stream.text, 'event: error')
  })

  test("another person's thread or stream id cannot be taken over", async ({ assert }) => {
    const { call, agentStream } = await setup(scriptedAgent({ steps: ['read'] }))
    const mine = (await call('POST', '/runs', { message: 'go', threadId: 'thread-a' })).json
    assert.equal(mine.threadId, 'thread-a')
    const theirs = await call('POST', '/runs', { message: 'x', threadId: 'thread-a' }, 'mallory')
    assert.equal(theirs.status, 404)
    // A stream the host opened itself is not a client's run id.
    const writer = await agentStream.sink.open('host-stream')
    await writer.end()
    const agui = await call('POST', '/agui', {
      threadId: 'thread-b',
      runId: 'host-stream',
      messages: [{ id: 'u', role: 'user', content: 'go' }],
    })
    assert.deepEqual(
      parseSse(agui.text).map((e) => e.event.code),
      ['run_id_used']
    )
    assert.equal((await call('POST', '/runs', { message: 'x', runId: 'host-stream' })).status, 409)
  })

  test("re-attaching at a failed run's error gets RUN_STARTED and the RUN_ERROR again", async ({
    assert,
  }) => {
    const { call, agentStream } = await setup(scriptedAgent({ failAt: 'start' }))
    const runId = randomUUID()
    const first = parseSse(
      (
        await call('POST', '/agui', {
          threadId: 't-fail',
          runId,
          messages: [{ id: 'u', role: 'user', content: 'go' }],
        })
      ).text
    )
    await agentStream.driver.settled()
    const errorAt = first.find((e) => e.event.type === 'RUN_ERROR')!.id!
    for (const after of [errorAt, String(Number(errorAt) + 1)]) {
      const again = parseSse((await call('GET', `/agui/runs/${runId}?after=${after}`)).text).map(
        (e) => e.event
      )
      assert.deepEqual(
        again.map((e) => e.type),
        ['RUN_STARTED', 'RUN_ERROR']
      )
      await assertConforms(assert, again)
    }
  })

  test('headers the app sets (CORS, cookies) reach SSE responses', async ({ assert }) => {
    const served = await serveApp({ runner: scriptedAgent({ steps: ['read'] }) }, (group) =>
      group.use(async (ctx, next) => {
        ctx.response.header('access-control-allow-origin', 'https://app.example')
        await next()
      })
    )
    await resetTables(await served.app.container.make('lucid.db'))
    const response = await postJson(`${served.url}/agui`, runInput('t', randomUUID()))
    assert.equal(response.headers.get('access-control-allow-origin'), 'https://app.example')
    assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8')
    await response.text()
  })
})

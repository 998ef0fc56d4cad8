import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import {
  HttpAgent,
  runHttpRequest,
  transformHttpEventStream,
  type RunAgentInput,
} from '@ag-ui/client'
import * as projection from '../src/core/projection.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { twoApprovals } from './helpers/scenarios.js'
import { FrameTranslator } from '../src/agui/translate/index.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { scriptedAgent, type ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'
import { sleep } from './helpers/sink.js'

/** Alice on the AG-UI 1.0 client: a cancelled run ends with the `cancelled` outcome. */
const ALICE_1_0 = { 'x-user': 'alice', 'x-ag-ui-client-version': '1.0.0' }

async function setup(options: ScriptedAgentOptions = { steps: ['read', 'approval'] }) {
  const served = await serveApp({ runner: scriptedAgent(options) })
  await resetTables(await served.app.container.make('lucid.db'))
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${served.url}${path}`, {
      headers: { ...ALICE_1_0, ...headers },
    })
    return { status: response.status, items: parseSse(await response.text()) }
  }
  const events = async (path: string, headers: Record<string, string> = {}) =>
    (await get(path, headers)).items.map((item) => item.event)
  /** A new AG-UI run on a new thread that parks on the approval. */
  const park = async () => {
    const threadId = `t-${randomUUID()}`
    const response = await postJson(`${served.url}/agui`, {
      threadId,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: 'go' }],
    })
    const items = parseSse(await response.text())
    const finished = items.at(-1)!.event
    if (finished.outcome?.type !== 'interrupt') throw new Error(JSON.stringify(finished))
    await served.agentStream.driver.settled()
    return {
      threadId,
      runId: items[0].event.runId as string,
      items,
      interrupt: finished.outcome.interrupts[0] as WireEvent,
    }
  }
  return { ...served, get, events, park }
}

/** The results of the calls that asked approval (the read tool's are not these tests'). */
const results = (events: WireEvent[]) =>
  events
    .filter((e) => e.type === 'TOOL_CALL_RESULT' && !e.content.startsWith('{'))
    .map((e) => [e.toolCallId, e.content])

/** The native stream's `tool-output-denied` frames. */
async function nativeDenials(url: string, runId: string) {
  const response = await fetch(`${url}/runs/${runId}/stream`, { headers: { ...ALICE_1_0 } })
  return parseSse(await response.text())
    .map((item) => item.event as any)
    .filter((frame) => frame.t === 'event' && frame.event.kind === 'tool-output-denied')
    .map((frame) => frame.event)
}

test.group('AG-UI: a cancelled run ends cancelled on every route (issue 10, item 5)', () => {
  test('after a cancel, the thread and run routes end with RUN_FINISHED cancelled, no interrupt', async ({
    assert,
  }) => {
    const { url, events, park, agentStream } = await setup()
    const { threadId, runId, interrupt, items } = await park()
    const cancel = await postJson(`${url}/runs/${runId}/cancel`, {})
    assert.equal(cancel.status, 200)
    await agentStream.driver.settled()
    const cancelled = [[interrupt.toolCallId, projection.TOOL_CANCELLED_SENTENCE]]
    for (const path of [`/agui/threads/${threadId}`, `/agui/runs/${runId}`]) {
      const served = await events(path)
      await assertConforms(assert, served)
      assert.deepEqual(served.at(-1)!.outcome, { type: 'cancelled' }, path)
      assert.deepEqual(results(served), cancelled, path)
    }
    // Re-attached from every id the parked run sent: the cancellation, once, never an interrupt.
    for (const { id } of items.filter((item) => item.id)) {
      const served = await events(`/agui/runs/${runId}`, { 'last-event-id': id! })
      await assertConforms(assert, served)
      assert.deepEqual(served.at(-1)!.outcome, { type: 'cancelled' }, `after ${id}`)
      assert.isAtMost(results(served).length, 1)
    }
    // The native stream shows it too.
    assert.deepEqual(await nativeDenials(url, runId), [
      {
        kind: 'tool-output-denied',
        id: `${runId}.call1`,
        reason: 'cancelled',
        status: 'cancelled',
        message: projection.TOOL_CANCELLED_SENTENCE,
      },
    ])
    // The Fetch handler serves the same door.
    const handle = createAgUiFetchHandler(agentStream.door, {
      basePath: '/agui',
      principal: () => ({ id: 'alice' }),
    })
    const fetched = parseSse(
      await (
        await handle(new Request(`http://x/agui/threads/${threadId}`, { headers: ALICE_1_0 }))
      ).text()
    ).map((item) => item.event)
    assert.deepEqual(fetched.at(-1)!.outcome, { type: 'cancelled' })
    // A resume of the cancelled interrupt says so, and changes nothing.
    const resumed = parseSse(
      await (
        await postJson(`${url}/agui`, {
          threadId,
          runId: randomUUID(),
          messages: [],
          resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } }],
        })
      ).text()
    ).map((item) => item.event)
    assert.deepEqual(
      resumed.map((e) => [e.type, e.code]),
      [['RUN_ERROR', 'interrupt_cancelled']]
    )
  })

  test('a park cancelled after one of its calls was approved: neither ran, both say so', async ({
    assert,
  }) => {
    const served = await serveApp({ runner: twoApprovals })
    await resetTables(await served.app.container.make('lucid.db'))
    const threadId = `t-${randomUUID()}`
    const first = parseSse(
      await (
        await postJson(`${served.url}/agui`, {
          threadId,
          runId: randomUUID(),
          messages: [{ id: 'u', role: 'user', content: 'go' }],
        })
      ).text()
    ).map((item) => item.event)
    const runId = first[0].runId as string
    assert.equal((await postJson(`${served.url}/items/${runId}/a/approve`, {})).status, 200)
    assert.equal((await postJson(`${served.url}/runs/${runId}/cancel`, {})).status, 200)
    await served.agentStream.driver.settled()
    const response = await fetch(`${served.url}/agui/threads/${threadId}`, {
      headers: { ...ALICE_1_0 },
    })
    const events = parseSse(await response.text()).map((item) => item.event)
    await assertConforms(assert, events)
    assert.deepEqual(events.at(-1)!.outcome, { type: 'cancelled' })
    const calls = first.filter((e) => e.type === 'TOOL_CALL_START').map((e) => e.toolCallId)
    assert.deepEqual(
      results(events),
      calls.map((id) => [id, projection.TOOL_CANCELLED_SENTENCE])
    )
  })

  test('HttpAgent.connectAgent() after a cancel holds no pending interrupt', async ({ assert }) => {
    const { url, park } = await setup()
    const { threadId, runId, interrupt } = await park()
    await postJson(`${url}/runs/${runId}/cancel`, {})
    class ReattachingAgent extends HttpAgent {
      protected connect(input: RunAgentInput) {
        return transformHttpEventStream(
          runHttpRequest(() =>
            fetch(`${url}/agui/threads/${input.threadId}`, {
              headers: { ...ALICE_1_0, Accept: 'text/event-stream' },
            })
          )
        )
      }
    }
    const client = new ReattachingAgent({ url: `${url}/agui`, threadId })
    await client.connectAgent()
    assert.lengthOf(client.pendingInterrupts, 0)
    const tool = client.messages.find(
      (m: any) => m.role === 'tool' && m.toolCallId === interrupt.toolCallId
    ) as any
    assert.equal(tool.content, projection.TOOL_CANCELLED_SENTENCE)
  })

  test('a running run cancelled after it asked for approval: the call says so, no interrupt', async ({
    assert,
  }) => {
    const waiting: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: 'a',
            name: 'act',
            input: {},
            toolKind: 'action',
          },
        })
        await ctx.writer.write({
          t: 'approval',
          runId: ctx.runId,
          id: 'a',
          toolName: 'act',
          input: {},
        })
        if (!ctx.signal.aborted) {
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
        }
        return { status: 'cancelled' }
      },
      resume: async () => ({ status: 'finished' }),
    }
    const served = await serveApp({ runner: waiting })
    await resetTables(await served.app.container.make('lucid.db'))
    const threadId = `t-${randomUUID()}`
    const runId = randomUUID()
    const response = await fetch(`${served.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ALICE_1_0 },
      body: JSON.stringify({
        threadId,
        runId,
        messages: [{ id: 'u', role: 'user', content: 'go' }],
      }),
    })
    while (!served.agentStream.driver.abort(runId)) await sleep(10)
    const live = parseSse(await response.text()).map((item) => item.event)
    await served.agentStream.driver.settled()
    const attached = parseSse(
      await (
        await fetch(`${served.url}/agui/threads/${threadId}`, { headers: { ...ALICE_1_0 } })
      ).text()
    ).map((item) => item.event)
    for (const events of [live, attached]) {
      await assertConforms(assert, events)
      assert.deepEqual(events.at(-1)!.outcome, { type: 'cancelled' })
      assert.deepEqual(
        results(events).map(([, content]) => content),
        [projection.TOOL_CANCELLED_SENTENCE]
      )
    }
    assert.lengthOf(await served.agentStream.parking.queries.pendingOf(runId), 0)
  })

  test('a run aborted after it asked for approval ends cancelled, not on an interrupt', ({
    assert,
  }) => {
    const translator = new FrameTranslator({ streamRunId: 'r1' })
    translator.push(
      { t: 'approval', runId: 'r1', id: 'c1', toolName: 'act', input: {} },
      { seq: 1 }
    )
    translator.push({ t: 'event', event: { kind: 'cancelled' } }, { seq: 2 })
    assert.deepEqual(translator.outcome(), { type: 'cancelled' })
  })
})

test.group('Declined, expired and cancelled calls each say so (issue 10, item 6)', () => {
  test('three truthful sentences, the same on the AG-UI and native doors', async ({ assert }) => {
    const sentences = [
      projection.TOOL_DECLINED_SENTENCE,
      projection.TOOL_EXPIRED_SENTENCE,
      projection.TOOL_CANCELLED_SENTENCE,
    ]
    assert.lengthOf(new Set(sentences.filter((s) => typeof s === 'string')), 3)
    assert.match(projection.TOOL_EXPIRED_SENTENCE, /expired/)
    assert.match(projection.TOOL_CANCELLED_SENTENCE, /cancelled/)
  })

  test('an expired approval is reported as expired; a rejected one as declined', async ({
    assert,
  }) => {
    const { url, events, park, agentStream } = await setup({
      steps: ['read', 'approval'],
      expiresInMs: 300,
    })
    const expired = await park()
    const rejected = await park()
    const [item] = await agentStream.parking.queries.list({ streamRunId: rejected.runId })
    const reject = await postJson(`${url}/items/${item.runId}/${item.itemId}/reject`, {
      reason: 'not now',
    })
    assert.equal(reject.status, 200)
    await sleep(400)
    assert.equal(await agentStream.parking.sweeper.expireLapsed(), 1)
    await agentStream.driver.settled()
    for (const [parked, status, sentence] of [
      [expired, 'expired', projection.TOOL_EXPIRED_SENTENCE],
      [rejected, 'rejected', projection.TOOL_DECLINED_SENTENCE],
    ] as const) {
      const served = await events(`/agui/threads/${parked.threadId}`)
      await assertConforms(assert, served)
      assert.deepEqual(results(served)[0], [parked.interrupt.toolCallId, sentence], status)
      const [denial] = await nativeDenials(url, parked.runId)
      assert.include(denial, { status, message: sentence })
    }
  })
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { DecisionConflictError } from '../src/errors.js'
import { resetTables } from './helpers/db.js'
import { jsonClient, postJson, serveApp } from './helpers/http.js'
import { parseSse } from './helpers/agui.js'
import { snapshot } from './helpers/parking.js'

/**
 * A provider that numbers its tool calls per response: every round asks approval for `call_0`
 * again (`{ n: 1 }`, then `{ n: 2 }`), and a question set under `q_0` again; what it runs is
 * recorded.
 */
function reusingRunner(ran: unknown[]): AgentRunner {
  const ask = async (ctx: RunContext, n: number) => {
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'call_0',
      toolName: 'pay',
      input: { n },
    })
    await ctx.writer.write({
      t: 'elicitation',
      runId: ctx.runId,
      id: 'q_0',
      request: {
        id: 'q_0',
        source: 'ask',
        questions: [{ id: 'ok', prompt: 'OK?', options: [{ value: 'yes', label: 'Yes' }] }],
      },
    })
    return { status: 'parked' as const, checkpoint: { n } }
  }
  return {
    start: (ctx) => ask(ctx, 1),
    async resume(ctx) {
      for (const item of ctx.items) if (item.status === 'approved') ran.push(item.input)
      const n = (ctx.checkpoint as { n: number }).n + 1
      return n > 2 ? { status: 'finished' } : ask(ctx, n)
    },
  }
}

async function setup() {
  const ran: unknown[] = []
  const served = await serveApp({ runner: reusingRunner(ran) })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const request = jsonClient(served.url)
  const call = (path: string, body?: unknown, user = 'alice') =>
    request(body === undefined ? 'GET' : 'POST', path, body, user)
  /** An admin form post with the page's token and cookie. */
  const admin = async (path: string, fields: Record<string, string>) => {
    // Any item view carries the form token (the run's first call is always there).
    const page = await fetch(`${served.url}/admin/items/${runId}/call_0`, {
      headers: { 'x-admin': 'yes', 'x-user': 'alice' },
    })
    const html = await page.text()
    const token = /name="agent_stream_csrf" value="([^"]+)"/.exec(html)![1]
    const cookie = page.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ')
    const response = await fetch(`${served.url}${path}`, {
      method: 'POST',
      headers: {
        'x-admin': 'yes',
        'x-user': 'alice',
        cookie,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ agent_stream_csrf: token, ...fields }).toString(),
      redirect: 'manual',
    })
    return new URL(response.headers.get('location') ?? '', served.url).searchParams.get('notice')
  }
  const started = await call('/runs', { message: 'go' })
  const { runId } = started.json
  await served.agentStream.driver.settled()
  return { ...served, db, ran, call, admin, runId }
}

/** The native stream's frames of one kind. */
function native(text: string, t: string) {
  return parseSse(text)
    .map((item) => item.event as any)
    .filter((frame) => frame.t === t)
}

test.group('Parking | every decision addresses one park (issue 10, item 11)', () => {
  test('the native approval and question frames carry their park', async ({ assert }) => {
    const { call, runId, agentStream } = await setup()
    await call(`/items/${runId}/call_0/approve`, {})
    await call(`/items/${runId}/q_0/answer`, { answers: { ok: ['yes'] } })
    await agentStream.driver.settled()
    const stream = (await call(`/runs/${runId}/stream`)).text
    assert.deepEqual(
      native(stream, 'approval').map((f) => [f.id, f.park]),
      [
        ['call_0', 1],
        ['call_0', 2],
      ]
    )
    assert.deepEqual(
      native(stream, 'elicitation').map((f) => [f.id, f.park]),
      [
        ['q_0', 1],
        ['q_0', 2],
      ]
    )
  })

  test('a replayed unpinned decision on a reused id is a conflict; pinned ones decide one park', async ({
    assert,
  }) => {
    const { call, admin, runId, agentStream, db, ran } = await setup()
    // Only one park used the ids yet: an unpinned decision is unambiguous.
    assert.equal((await call(`/items/${runId}/call_0/approve`, {})).status, 200)
    assert.equal(
      (await call(`/items/${runId}/q_0/answer`, { answers: { ok: ['yes'] } })).status,
      200
    )
    await agentStream.driver.settled()
    assert.deepEqual(ran, [{ n: 1 }])
    // The second round parked `call_0` and `q_0` again. Replays of the first decisions:
    const before = await snapshot(db)
    for (const [path, body] of [
      [`/items/${runId}/call_0/approve`, {}],
      [`/items/${runId}/call_0/reject`, {}],
      [`/items/${runId}/q_0/answer`, { answers: { ok: ['yes'] } }],
    ] as const) {
      const replay = await call(path, body)
      assert.equal(replay.status, 409, path)
      assert.equal(replay.json.code, 'E_DECISION_CONFLICT')
    }
    assert.equal(
      await admin(`/admin/items/${runId}/call_0/approve`, {}),
      'E_DECISION_CONFLICT',
      'the admin form without a park'
    )
    await agentStream.driver.settled()
    assert.equal(await snapshot(db), before, 'an unpinned decision changed a row')
    assert.deepEqual(ran, [{ n: 1 }])
    // Pinned: the first park is decided already, a park that never was is missing.
    assert.equal((await call(`/items/${runId}/call_0/approve`, { park: 1 })).status, 409)
    assert.equal((await call(`/items/${runId}/call_0/approve`, { park: 3 })).status, 404)
    assert.equal((await call(`/items/${runId}/call_0/approve`, { park: 2 })).status, 200)
    assert.equal(
      (await call(`/items/${runId}/q_0/answer`, { answers: { ok: ['yes'] }, park: 2 })).status,
      200
    )
    await agentStream.driver.settled()
    assert.deepEqual(ran, [{ n: 1 }, { n: 2 }])
  })

  test('the parking decisions API: an unpinned decision or expiry on a reused id is a conflict', async ({
    assert,
  }) => {
    const { call, runId, agentStream, db } = await setup()
    await call(`/items/${runId}/call_0/approve`, {})
    await call(`/items/${runId}/q_0/answer`, { answers: { ok: ['yes'] } })
    await agentStream.driver.settled()
    const { decisions } = agentStream.parking
    const alice = { principal: { id: 'alice' } }
    const before = await snapshot(db)
    await assert.rejects(() => decisions.approve(runId, 'call_0', alice), DecisionConflictError)
    await assert.rejects(() => decisions.reject(runId, 'call_0', alice), DecisionConflictError)
    await assert.rejects(
      () => decisions.answer(runId, 'q_0', alice, { answers: {} }),
      DecisionConflictError
    )
    await assert.rejects(() => decisions.expire(runId, 'call_0'), DecisionConflictError)
    assert.equal(await snapshot(db), before)
    assert.include(await decisions.reject(runId, 'call_0', alice, { park: 2 }), {
      status: 'rejected',
    })
  })

  test('an AG-UI resume naming an earlier park of a reused id is answered as decided', async ({
    assert,
  }) => {
    const { url, db } = await setup()
    const threadId = `t-${randomUUID()}`
    const sse = async (body: unknown) =>
      parseSse(await (await postJson(`${url}/agui`, body)).text()).map((e) => e.event)
    const first = await sse({
      threadId,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: 'go' }],
    })
    const interrupts = first.at(-1)!.outcome.interrupts as { id: string; reason: string }[]
    const answer = (reason?: string) =>
      interrupts.map((i) => ({
        interruptId: i.id,
        status: 'resolved',
        payload:
          i.reason === 'tool_call'
            ? { approved: true, ...(reason ? { reason } : {}) }
            : { answers: { ok: ['yes'] } },
      }))
    const second = await sse({ threadId, runId: randomUUID(), messages: [], resume: answer() })
    assert.equal(second.at(-1)!.outcome.type, 'interrupt')
    // The first park's interrupts again, with another payload: decided, not unknown.
    const before = await snapshot(db)
    const late = await sse({ threadId, runId: randomUUID(), messages: [], resume: answer('late') })
    assert.deepEqual(
      late.map((e) => [e.type, e.code]),
      [['RUN_ERROR', 'interrupt_decided']]
    )
    assert.equal(await snapshot(db), before)
  })
})

test.group('Parking | decision bodies are validated before any lookup (issue 10, item 15)', () => {
  test('a bad park or body is 422 on every decision route, even for an item that does not exist', async ({
    assert,
  }) => {
    const { call, runId, db } = await setup()
    const before = await snapshot(db)
    for (const item of ['q_0', 'call_0', 'nope']) {
      for (const park of [-1, 0, 1.5, '1', true, 1e20]) {
        for (const action of ['approve', 'reject', 'answer']) {
          const body = action === 'answer' ? { answers: { ok: ['yes'] }, park } : { park }
          const reply = await call(`/items/${runId}/${item}/${action}`, body)
          assert.equal(reply.status, 422, `${item} ${action} park=${JSON.stringify(park)}`)
          assert.equal(reply.json.code, 'E_INVALID_DECISION')
          // The rule is named, the value never echoed.
          if (park === 1.5) assert.notInclude(reply.json.message, '1.5')
        }
      }
      const shapeless = await call(`/items/${runId}/${item}/answer`, { answers: 'yes' })
      assert.equal(shapeless.status, 422, `${item}: answers not a record`)
    }
    assert.equal(await snapshot(db), before)
  })

  test('the admin form is validated before any lookup: a park that is not a whole number decides nothing', async ({
    assert,
  }) => {
    const { admin, runId, db } = await setup()
    const before = await snapshot(db)
    for (const park of ['-1', '1.5', 'x', '0', '1e3', '+1']) {
      for (const [item, action] of [
        ['call_0', 'approve'],
        ['call_0', 'reject'],
        ['q_0', 'answer'],
        ['nope', 'approve'],
      ]) {
        const notice = await admin(`/admin/items/${runId}/${item}/${action}`, { park })
        assert.equal(notice, 'E_INVALID_DECISION', `${item} ${action} park=${park}`)
      }
    }
    assert.equal(await snapshot(db), before)
    assert.equal(await admin(`/admin/items/${runId}/call_0/approve`, { park: '1' }), 'approved')
  })
})

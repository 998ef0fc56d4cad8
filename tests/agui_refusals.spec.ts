import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner } from '../src/runner/contract.js'
import { twoApprovals } from './helpers/scenarios.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables, snapshotTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'

async function setup(runner: AgentRunner, config: Record<string, unknown> = {}) {
  const served = await serveApp({ runner, ...config })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const snapshot = () => snapshotTables(db)
  const post = async (body: unknown, user = 'alice') => {
    const response = await postJson(`${served.url}/agui`, body, user)
    const text = await response.text()
    return {
      status: response.status,
      headers: response.headers,
      text,
      events: response.headers.get('content-type')?.startsWith('text/event-stream')
        ? parseSse(text).map((e) => e.event)
        : [],
    }
  }
  return { ...served, snapshot, post }
}

const input = (threadId: string, extra: Record<string, unknown> = {}) => ({
  threadId,
  runId: randomUUID(),
  messages: [{ id: 'u1', role: 'user', content: 'go' }],
  ...extra,
})

/** Start a run that parks; its interrupts. */
async function parked(post: (body: unknown) => Promise<{ events: WireEvent[] }>) {
  const threadId = `t-${randomUUID()}`
  const { events } = await post(input(threadId))
  const finished = events.at(-1)!
  if (finished.outcome?.type !== 'interrupt') throw new Error(JSON.stringify(events))
  return { threadId, interrupts: finished.outcome.interrupts as WireEvent[] }
}

/** Assert a refusal: one RUN_ERROR with `code`, accepted by the official checks, no row changed. */
async function assertRefused(
  assert: any,
  ctx: Awaited<ReturnType<typeof setup>>,
  body: unknown,
  code: string,
  user = 'alice'
) {
  const before = await ctx.snapshot()
  const reply = await ctx.post(body, user)
  assert.equal(reply.status, 200)
  assert.deepEqual(
    reply.events.map((e) => [e.type, e.code]),
    [['RUN_ERROR', code]]
  )
  await assertConforms(assert, reply.events)
  await ctx.agentStream.driver.settled()
  assert.equal(await ctx.snapshot(), before, `${code}: a row changed`)
}

/** Events with consecutive text deltas of one message joined. */
function folded(events: WireEvent[]) {
  const out: WireEvent[] = []
  for (const event of events) {
    const last = out.at(-1)
    if (
      event.type === 'TEXT_MESSAGE_CONTENT' &&
      last?.type === 'TEXT_MESSAGE_CONTENT' &&
      last.messageId === event.messageId
    ) {
      out[out.length - 1] = { ...last, delta: last.delta + event.delta }
    } else out.push(event)
  }
  return out
}

test.group('AG-UI door: refusals change nothing', () => {
  test('bad input is refused before the stream opens: 400/413 naming the rule', async ({
    assert,
  }) => {
    const ctx = await setup(scriptedAgent(), { agui: { maxBodyBytes: 2048 } })
    const before = await ctx.snapshot()
    const badId = await ctx.post(input('a/b'))
    assert.equal(badId.status, 400)
    assert.equal(JSON.parse(badId.text).code, 'invalid_input')
    assert.include(JSON.parse(badId.text).message, 'threadId')
    assert.notInclude(badId.text, 'a/b')
    const noMessage = await ctx.post(input('t1', { messages: [] }))
    assert.equal(noMessage.status, 400)
    const big = await ctx.post(
      input('t1', { messages: [{ id: 'u', role: 'user', content: 'x'.repeat(4000) }] })
    )
    assert.equal(big.status, 413)
    assert.equal(JSON.parse(big.text).code, 'body_too_large')
    assert.equal(await ctx.snapshot(), before)
  })

  test('a resume on a thread with nothing pending: no_pending_interrupt', async ({ assert }) => {
    const ctx = await setup(scriptedAgent({ steps: ['read'] }))
    const threadId = `t-${randomUUID()}`
    const done = await ctx.post(input(threadId))
    assert.equal(done.events.at(-1)!.type, 'RUN_FINISHED')
    await ctx.agentStream.driver.settled()
    const resume = [{ interruptId: 'int-x', status: 'resolved', payload: { approved: true } }]
    await assertRefused(assert, ctx, input(threadId, { resume }), 'no_pending_interrupt')
  })

  test('a new message while interrupts are pending: interrupt_pending', async ({ assert }) => {
    const ctx = await setup(scriptedAgent({ steps: ['approval'] }))
    const { threadId } = await parked(ctx.post)
    await assertRefused(assert, ctx, input(threadId), 'interrupt_pending')
  })

  test('resume rules: nothing pending, unknown, duplicate, partial, bad payload, used run id', async ({
    assert,
  }) => {
    const ctx = await setup(twoApprovals)
    const { threadId, interrupts } = await parked(ctx.post)
    assert.lengthOf(interrupts, 2)
    const ok = (id: string) => ({
      interruptId: id,
      status: 'resolved',
      payload: { approved: true },
    })
    const [a, b] = interrupts.map((i) => i.id as string)
    // A resume on a thread that does not exist: the 404 of another person's thread.
    const before = await ctx.snapshot()
    const nowhere = await ctx.post(input(`t-${randomUUID()}`, { resume: [ok(a)] }))
    const foreign = await ctx.post(input(threadId, { resume: [ok(a), ok(b)] }), 'mallory')
    assert.equal(nowhere.status, 404)
    assert.equal(foreign.status, 404)
    assert.equal(nowhere.text, foreign.text)
    assert.equal(await ctx.snapshot(), before)
    await assertRefused(
      assert,
      ctx,
      input(threadId, { resume: [ok(a), ok(`${b}x`)] }),
      'unknown_interrupt'
    )
    await assertRefused(
      assert,
      ctx,
      input(threadId, { resume: [ok(a), ok(a)] }),
      'duplicate_interrupt'
    )
    await assertRefused(assert, ctx, input(threadId, { resume: [ok(a)] }), 'incomplete_resume')
    await assertRefused(
      assert,
      ctx,
      input(threadId, {
        resume: [ok(a), { interruptId: b, status: 'resolved', payload: { approved: 'yes' } }],
      }),
      'invalid_resume_payload'
    )
    await assertRefused(
      assert,
      ctx,
      input(threadId, { resume: [ok(a), { interruptId: b, status: 'resolved' }] }),
      'invalid_resume_payload'
    )
    const badStatus = await ctx.post(
      input(threadId, { resume: [ok(a), { interruptId: b, status: 'approved' }] })
    )
    assert.equal(badStatus.status, 400)
    // A used run id: another thread's (the parked run's own is accepted, see
    // agui_copilotkit_rules.spec.ts), and the parked run's own on a new input (no resume).
    const other = await parked(ctx.post)
    const theirs = await ctx.agentStream.door.runs.latest(other.threadId)
    await assertRefused(
      assert,
      ctx,
      { ...input(threadId, { resume: [ok(a), ok(b)] }), runId: theirs!.runId },
      'run_id_used'
    )
    const first = await ctx.agentStream.door.runs.latest(threadId)
    await assertRefused(assert, ctx, { ...input(threadId), runId: first!.runId }, 'run_id_used')
  })

  test('an expired interrupt can only be cancelled; a role approver is not the requester', async ({
    assert,
  }) => {
    const ctx = await setup(scriptedAgent({ steps: ['approval'], expiresInMs: 1 }))
    const { threadId, interrupts } = await parked(ctx.post)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const id = interrupts[0].id
    await assertRefused(
      assert,
      ctx,
      input(threadId, {
        resume: [{ interruptId: id, status: 'resolved', payload: { approved: true } }],
      }),
      'interrupt_expired'
    )
    const cancelled = await ctx.post(
      input(threadId, { resume: [{ interruptId: id, status: 'cancelled' }] })
    )
    await assertConforms(assert, cancelled.events)
    assert.deepEqual(cancelled.events.at(-1)!.outcome, { type: 'success' })
    const result = cancelled.events.find((e) => e.type === 'TOOL_CALL_RESULT')!
    assert.equal(result.toolCallId, interrupts[0].toolCallId)

    const roles = await setup(scriptedAgent({ steps: ['approval'], approver: 'admin' }))
    const other = await parked(roles.post)
    await assertRefused(
      assert,
      roles,
      input(other.threadId, {
        resume: [
          { interruptId: other.interrupts[0].id, status: 'resolved', payload: { approved: true } },
        ],
      }),
      'not_allowed'
    )
  })

  test("another person's thread or run answers 404, like a missing one", async ({ assert }) => {
    const ctx = await setup(scriptedAgent({ steps: ['approval'] }))
    const { threadId, interrupts } = await parked(ctx.post)
    const before = await ctx.snapshot()
    const resume = [
      { interruptId: interrupts[0].id, status: 'resolved', payload: { approved: true } },
    ]
    const stranger = await ctx.post(input(threadId, { resume }), 'mallory')
    assert.equal(stranger.status, 404)
    const run = await ctx.agentStream.door.runs.latest(threadId)
    const theirs = await fetch(`${ctx.url}/agui/runs/${run!.runId}`, {
      headers: { 'x-user': 'mallory' },
    })
    const missing = await fetch(`${ctx.url}/agui/runs/nope`, { headers: { 'x-user': 'mallory' } })
    assert.equal(theirs.status, 404)
    assert.equal(missing.status, 404)
    assert.equal(await theirs.text(), await missing.text())
    assert.equal(await ctx.snapshot(), before)
  })

  test('interrupts answered elsewhere (the admin page): interrupt_decided, nothing changes', async ({
    assert,
  }) => {
    const ctx = await setup(scriptedAgent({ steps: ['approval', 'question'] }))
    const { threadId, interrupts } = await parked(ctx.post)
    const [item] = await ctx.agentStream.parking.queries.list({ threadId })
    await ctx.agentStream.parking.decisions.approve(item.runId, item.itemId, {
      principal: { id: 'alice' },
      via: 'admin',
    })
    await ctx.agentStream.driver.settled()
    // The run went on and parked on its question set: the old interrupt is decided, not unknown.
    await assertRefused(
      assert,
      ctx,
      input(threadId, {
        resume: [
          { interruptId: interrupts[0].id, status: 'resolved', payload: { approved: false } },
        ],
      }),
      'interrupt_decided'
    )
  })

  test('the same resume sent twice runs once; the second gets the first run replayed', async ({
    assert,
  }) => {
    let resumes = 0
    const ctx = await setup(scriptedAgent({ steps: ['approval'], onResume: () => resumes++ }))
    const { threadId, interrupts } = await parked(ctx.post)
    const resume = [
      { interruptId: interrupts[0].id, status: 'resolved', payload: { approved: true } },
    ]
    const first = await ctx.post(input(threadId, { resume }))
    await ctx.agentStream.driver.settled()
    const second = await ctx.post(input(threadId, { resume }))
    await ctx.agentStream.driver.settled()
    assert.equal(resumes, 1)
    // A replay reads text as stored (coalesced): the same events once deltas are joined.
    assert.deepEqual(folded(second.events), folded(first.events))
    const different = await ctx.post(
      input(threadId, { resume: [{ ...resume[0], payload: { approved: false } }] })
    )
    assert.deepEqual(
      different.events.map((e) => e.code),
      ['interrupt_decided']
    )
  })
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray, type BaseEvent } from '@ag-ui/client'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { isMintedRunId } from '../src/agui/ids.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { ReattachingAgent, assertConforms, parseSse, type WireEvent } from './helpers/agui.js'

/**
 * The door rules CopilotKit needs (issue 13), driven with the official `HttpAgent` the way
 * CopilotKit's `useInterrupt` drives it: the resume carries the interrupted run's own `runId`
 * and a tool message of the client's own for the approved call; a thread restored by a client
 * that has nothing comes back in order. The CopilotKit suite itself is `npm run test:copilotkit`.
 */

const headers = { 'x-user': 'alice' }

async function setup(config: Record<string, unknown> = {}) {
  const served = await serveApp({
    runner: scriptedAgent({ steps: ['read', 'approval', 'question'] }),
    ...config,
  })
  await resetTables(await served.app.container.make('lucid.db'))
  /** GET a re-attach route; the events. */
  const attach = async (path: string) => {
    const response = await fetch(`${served.url}/agui/${path}`, { headers })
    return parseSse(await response.text()).map((e) => e.event)
  }
  return { ...served, attach }
}

/** `agent.runAgent(parameters)`, with the events it received. */
async function run(agent: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0]) {
  const events: WireEvent[] = []
  await agent.runAgent(parameters, {
    onEvent: ({ event }: { event: BaseEvent }) => void events.push(event as WireEvent),
  })
  return events
}

/** What CopilotKit's `useInterrupt` resolve() does: its own tool message, then the resume. */
function resolveLikeCopilotKit(agent: HttpAgent, payload: unknown) {
  const [interrupt] = agent.pendingInterrupts
  if (interrupt.toolCallId) {
    agent.messages.push({
      id: randomUUID(),
      role: 'tool',
      toolCallId: interrupt.toolCallId,
      content: JSON.stringify(payload),
    } as any)
  }
  return buildResumeArray(agent.pendingInterrupts, {
    [interrupt.id]: { status: 'resolved', payload },
  })
}

test.group('AG-UI door: what CopilotKit sends and restores', () => {
  test('a resume under the interrupted run id is accepted, once; each id re-attaches to its own run', async ({
    assert,
  }) => {
    const ctx = await setup()
    const threadId = `t-${randomUUID()}`
    const agent = new HttpAgent({ url: `${ctx.url}/agui`, threadId, headers })
    agent.messages.push({ id: 'u1', role: 'user', content: 'Send the weekly report' })
    const runId = randomUUID()
    const first = await run(agent, { runId })
    assert.equal(first.at(-1)!.outcome?.type, 'interrupt')
    const approval = agent.pendingInterrupts[0]
    assert.equal(approval.reason, 'tool_call')

    // The approval, as CopilotKit sends it: the interrupted run's own id.
    const resume = resolveLikeCopilotKit(agent, { approved: true })
    const second = await run(agent, { runId, resume })
    await assertConforms(assert, second)
    const continuation = second[0].runId as string
    assert.equal(second[0].type, 'RUN_STARTED')
    assert.notEqual(continuation, runId)
    assert.isTrue(isMintedRunId(continuation))
    assert.equal(second.at(-1)!.outcome?.type, 'interrupt')
    assert.equal(agent.pendingInterrupts[0].reason, 'input_required')

    // The snapshot (default 'resumes') put the real result in place of the client's own.
    assert.equal(second.at(-2)!.type, 'MESSAGES_SNAPSHOT')
    const results = agent.messages.filter(
      (m: any) => m.role === 'tool' && m.toolCallId === approval.toolCallId
    )
    assert.lengthOf(results, 1)
    assert.notEqual((results[0] as any).content, '{"approved":true}')
    assert.include((results[0] as any).content, 'sent')
    assert.equal(agent.messages[0].id, 'u1')

    // The same resume again under the same id: the run it started, replayed; nothing reruns.
    const again = await fetch(`${ctx.url}/agui`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ threadId, runId, messages: [], resume }),
    })
    const replayed = parseSse(await again.text()).map((e) => e.event)
    assert.equal(replayed[0].runId, continuation)
    assert.deepEqual(
      replayed.map((e) => e.type),
      second.map((e) => e.type)
    )
    // Another answer to the decided approval under that id: decided once.
    const other = await fetch(`${ctx.url}/agui`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId,
        runId,
        messages: [],
        resume: [{ interruptId: approval.id, status: 'resolved', payload: { approved: false } }],
      }),
    })
    const refused = parseSse(await other.text()).map((e) => [e.event.type, e.event.code])
    assert.deepEqual(refused, [['RUN_ERROR', 'interrupt_decided']])

    // Each id re-attaches to its own run.
    const interrupted = await ctx.attach(`runs/${runId}`)
    assert.equal(interrupted[0].runId, runId)
    assert.equal(interrupted.at(-1)!.outcome.interrupts[0].id, approval.id)
    const resumed = await ctx.attach(`runs/${encodeURIComponent(continuation)}`)
    assert.equal(resumed[0].runId, continuation)
    assert.equal(resumed.at(-1)!.outcome.interrupts[0].reason, 'input_required')

    // The question set, answered the same way (CopilotKit still sends the first run's id).
    const answer = buildResumeArray(agent.pendingInterrupts, {
      [agent.pendingInterrupts[0].id]: {
        status: 'resolved',
        payload: { answers: { format: ['csv'] } },
      },
    })
    const third = await run(agent, { runId, resume: answer })
    await assertConforms(assert, third)
    assert.notEqual(third[0].runId, continuation)
    assert.deepEqual(third.at(-1)!.outcome, { type: 'success' })
    assert.lengthOf(agent.pendingInterrupts, 0)
    const last = agent.messages.at(-1) as any
    assert.equal(last.role, 'assistant')
    assert.include(last.content, 'All done.')
  })

  test('a run id of another thread, or reused on a new input, is still refused', async ({
    assert,
  }) => {
    const ctx = await setup()
    const a = new HttpAgent({ url: `${ctx.url}/agui`, threadId: `t-${randomUUID()}`, headers })
    a.messages.push({ id: 'u1', role: 'user', content: 'go' })
    const runId = randomUUID()
    await run(a, { runId })
    const b = new HttpAgent({ url: `${ctx.url}/agui`, threadId: `t-${randomUUID()}`, headers })
    b.messages.push({ id: 'u2', role: 'user', content: 'go' })
    await run(b, {})
    const resume = resolveLikeCopilotKit(b, { approved: true })
    const events = await run(b, { runId, resume })
    assert.deepEqual(
      events.map((e) => [e.type, e.code]),
      [['RUN_ERROR', 'run_id_used']]
    )
  })

  test('messagesSnapshot: false sends no snapshot in a resume; the default none in a new run', async ({
    assert,
  }) => {
    const ctx = await setup()
    const agent = new HttpAgent({ url: `${ctx.url}/agui`, threadId: `t-${randomUUID()}`, headers })
    agent.messages.push({ id: 'u1', role: 'user', content: 'go' })
    const first = await run(agent, {})
    assert.notInclude(
      first.map((e) => e.type),
      'MESSAGES_SNAPSHOT'
    )
    const off = await setup({ agui: { messagesSnapshot: false } })
    const plain = new HttpAgent({ url: `${off.url}/agui`, threadId: `t-${randomUUID()}`, headers })
    plain.messages.push({ id: 'u1', role: 'user', content: 'go' })
    await run(plain, {})
    const resumed = await run(plain, { resume: resolveLikeCopilotKit(plain, { approved: true }) })
    await assertConforms(assert, resumed)
    assert.notInclude(
      resumed.map((e) => e.type),
      'MESSAGES_SNAPSHOT'
    )
  })

  test('a thread restored without a cursor comes back in order (the admin answered first)', async ({
    assert,
  }) => {
    const ctx = await setup({ runner: scriptedAgent({ steps: ['read', 'approval'] }) })
    const threadId = `t-${randomUUID()}`
    const agent = new HttpAgent({ url: `${ctx.url}/agui`, threadId, headers })
    agent.messages.push({ id: 'u1', role: 'user', content: 'Send the weekly report' })
    await run(agent, {})
    // Someone else answers (the admin page's service), then a client with nothing connects.
    const [item] = await ctx.agentStream.parking.queries.list({ threadId, status: 'pending' })
    await ctx.agentStream.parking.decisions.approve(item.runId, item.itemId, {
      principal: { id: 'alice' },
      via: 'admin',
    })
    const restored = new ReattachingAgent({ url: `${ctx.url}/agui`, threadId, headers })
    const events: WireEvent[] = []
    await restored.connectAgent(
      {},
      { onEvent: ({ event }: { event: BaseEvent }) => void events.push(event as WireEvent) }
    )
    await assertConforms(assert, events)
    assert.deepEqual(
      events.slice(0, 2).map((e) => e.type),
      ['RUN_STARTED', 'MESSAGES_SNAPSHOT']
    )
    const prelude = events[1].messages as any[]
    assert.deepEqual(prelude[0], { id: 'u1', role: 'user', content: 'Send the weekly report' })
    assert.isTrue(prelude.some((m) => m.toolCalls?.length))
    assert.deepEqual(events.at(-1)!.outcome, { type: 'success' })
    const messages = restored.messages as any[]
    assert.equal(messages[0].id, 'u1')
    assert.equal(messages.at(-1).role, 'assistant')
    assert.isAbove(messages.length, 2)

    // The first run, re-attached without a cursor: its user message first, then its events.
    const [start] = await ctx.agentStream.door.runs.streams(threadId)
    const first = await ctx.attach(`runs/${start.runId}`)
    assert.equal(first[1].type, 'MESSAGES_SNAPSHOT')
    assert.deepEqual(first[1].messages, [
      { id: 'u1', role: 'user', content: 'Send the weekly report' },
    ])
    await assertConforms(assert, first)
    // With a cursor the client has the thread: no prelude snapshot.
    const response = await fetch(`${ctx.url}/agui/runs/${start.runId}?after=1`, { headers })
    const after = parseSse(await response.text()).map((e) => e.event)
    assert.notEqual(after[1]?.type, 'MESSAGES_SNAPSHOT')
  })
})

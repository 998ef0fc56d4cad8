import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { DEMO_USER } from '../../../demo/server.ts'
import { parseSse } from '../../../demo/cutting_fetch.ts'
import { copilotClient, copilotRuntime, demo, firstOptions, transcript, until } from './harness.ts'
import { FOLLOW_UP, HOLD, PARTIAL, STILL_HERE } from './held_model.ts'

/**
 * CopilotKit (`@copilotkit/runtime` 1.75, `@copilotkit/core` 1.75) against the demo app, with
 * the package's runner (`adonis-agent-stream/copilotkit`): CopilotKit's runtime in this process,
 * its headless client (what `<CopilotKit>` creates), its own interrupt decisions.
 */

let app: Awaited<ReturnType<typeof demo>>
let runtime: Awaited<ReturnType<typeof copilotRuntime>>

before(async () => {
  app = await demo({ tokensPerSecond: 0 })
  runtime = await copilotRuntime(app.agui)
})
after(async () => {
  await runtime.stop()
  await app.stop()
})

const thread = () => `t-${randomUUID()}`
const lastText = (messages: any[]) => messages.findLast((m) => m.role === 'assistant')?.content

/** Run a new thread to its approval; the client. */
async function toApproval(url = runtime.url, threadId = thread()) {
  const client = await copilotClient(url, threadId)
  await client.send('Send the weekly report')
  const pending: any = client.interrupts.pending
  assert.equal(pending?.kind, 'standard')
  assert.equal(pending.interrupts[0].reason, 'tool_call')
  return { client, threadId, approval: pending.interrupts[0] }
}

test('message -> tool call -> approval (stock resolve) -> question set -> answer -> final text', async () => {
  const { client, approval } = await toApproval()
  const messages = client.agent.messages as any[]
  assert.equal(messages[0].role, 'user')
  assert.ok(
    messages.some((m) => m.role === 'tool'),
    'a tool result before the approval'
  )

  await client.decide({ payload: { approved: true } })
  // The package's real result, not CopilotKit's own {"approved":true}.
  const results = (client.agent.messages as any[]).filter(
    (m) => m.role === 'tool' && m.toolCallId === approval.toolCallId
  )
  assert.equal(results.length, 1)
  assert.notEqual(results[0].content, '{"approved":true}')
  const question: any = client.interrupts.pending
  assert.equal(question?.interrupts[0].reason, 'input_required')

  await client.decide({ payload: firstOptions(question.interrupts[0]) })
  assert.equal(client.interrupts.pending, null)
  assert.match(lastText(client.agent.messages as any[]), /All done/)
  assert.equal((client.agent.messages as any[])[0].content, 'Send the weekly report')
  assert.ok(!client.events.some((e) => e.type === 'RUN_ERROR'), 'no run failed')
})

test("cancel (useInterrupt's cancel()): the call is not made, the run goes on", async () => {
  const { client, approval } = await toApproval()
  await client.decide('cancel')
  const results = (client.agent.messages as any[]).filter(
    (m) => m.role === 'tool' && m.toolCallId === approval.toolCallId
  )
  // The package's denial, not CopilotKit's own {"status":"cancelled"}.
  assert.equal(results.length, 1)
  assert.notEqual(results[0].content, '{"status":"cancelled"}')
  assert.doesNotMatch(results[0].content, /"sent":true/)
  assert.notEqual((client.interrupts.pending as any)?.interrupts[0].reason, 'tool_call')
  assert.ok(!client.events.some((e) => e.type === 'RUN_ERROR'), 'no run failed')
})

test('runtime restart: a new runtime instance restores the thread and its open approval', async () => {
  const threadId = thread()
  const { client } = await toApproval(runtime.url, threadId)
  const earlier = transcript(client.agent.messages as any[])
  const restarted = await copilotRuntime(app.agui)
  try {
    const restored = await copilotClient(restarted.url, threadId)
    await restored.connect()
    assert.deepEqual(transcript(restored.agent.messages as any[]), earlier)
    const pending: any = restored.interrupts.pending
    assert.equal(pending?.interrupts[0].reason, 'tool_call')
    // Approved from the restored chat, with CopilotKit's own resolve.
    await restored.decide({ payload: { approved: true } })
    assert.equal((restored.interrupts.pending as any)?.interrupts[0].reason, 'input_required')
  } finally {
    await restarted.stop()
  }

  // CopilotKit's own in-memory runner, for comparison: a restart restores nothing.
  const memory = await copilotRuntime(app.agui, 'memory')
  try {
    const lost = await copilotClient(memory.url, threadId)
    await lost.connect()
    assert.equal((lost.agent.messages as any[]).length, 0)
  } finally {
    await memory.stop()
  }
})

test('the admin approves first: the chat shows the continuation, in order', async () => {
  const threadId = thread()
  const { client, approval } = await toApproval(runtime.url, threadId)
  const [item] = await app.agentStream.parking.queries.list({ threadId, status: 'pending' })
  await app.agentStream.parking.decisions.approve(item.runId, item.itemId, {
    principal: DEMO_USER,
    via: 'admin',
  })
  const chat = await copilotClient(runtime.url, threadId)
  // Right after the decision the run may not have reopened yet: CopilotKit connects again.
  for (let i = 0; i < 50; i++) {
    await chat.connect()
    if ((chat.interrupts.pending as any)?.interrupts[0].reason === 'input_required') break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const messages = chat.agent.messages as any[]
  assert.equal(messages[0].content, 'Send the weekly report')
  const result = messages.findIndex(
    (m) => m.role === 'tool' && m.toolCallId === approval.toolCallId
  )
  assert.ok(result > 0, 'the approved call has its result')
  assert.ok(
    result > messages.findIndex((m) => m.toolCalls?.some((c: any) => c.id === approval.toolCallId))
  )
  assert.equal((chat.interrupts.pending as any)?.interrupts[0].reason, 'input_required')
  // The first chat's own resolve of the decided approval is refused, not run twice.
  await client.decide({ payload: { approved: true } }).catch(() => {})
  assert.ok(client.events.some((e) => e.type === 'RUN_ERROR' && e.code === 'interrupt_decided'))
})

test('reconnect mid-run: a second client joins the run and follows it live', async () => {
  const slow = await demo({ tokensPerSecond: 40 })
  const slowRuntime = await copilotRuntime(slow.agui)
  try {
    const threadId = thread()
    const first = await copilotClient(slowRuntime.url, threadId)
    const running = first.send('Send the weekly report')
    await until(() => first.events.some((e) => e.type === 'TEXT_MESSAGE_CONTENT'), 'the first text')
    const second = await copilotClient(slowRuntime.url, threadId)
    await second.connect()
    await running
    assert.equal((second.interrupts.pending as any)?.interrupts[0].reason, 'tool_call')
    assert.deepEqual(
      transcript(second.agent.messages as any[]),
      transcript(first.agent.messages as any[])
    )
  } finally {
    await slowRuntime.stop()
    await slow.stop()
  }
})

test("CopilotKit's stopAgent mid-answer: the run ends cancelled in the package, the text so far kept, the next message answered", async () => {
  const threadId = thread()
  const client = await copilotClient(runtime.url, threadId)
  const running = client.send(HOLD)
  try {
    await until(() => app.held.holds.length === 1, 'the held answer')
    await until(() => client.events.some((e) => e.type === 'TEXT_MESSAGE_CONTENT'), 'its text')
    // The chat's stop: the runtime's stop route, its runner's stop().
    client.core.stopAgent({ agent: client.agent })
    await running
  } finally {
    app.held.release()
  }
  assert.equal(app.held.holds[0].aborted, true, "the agent's signal aborted")
  // CopilotKit's own end of a stopped run (its AG-UI client knows no `cancelled` outcome).
  assert.equal(client.events.at(-1).type, 'RUN_FINISHED')
  assert.equal(client.events.at(-1).outcome, undefined)
  assert.ok(!client.events.some((e) => e.type === 'RUN_ERROR'), 'no run failed')
  const stopped = [
    ['user', HOLD],
    ['assistant', PARTIAL],
  ]
  assert.deepEqual(transcript(client.agent.messages as any[]), stopped)

  // The package's run control stopped it, as the run's person, and stored it cancelled.
  const db = await app.app.container.make('lucid.db')
  const run = await db.from('agent_agui_runs').where('thread_id', threadId).first()
  const stream = await db.from('agent_streams').where('run_id', run.stream_run_id).first()
  assert.deepEqual([stream.stop_mode, stream.stop_by], ['keep', DEMO_USER.id])
  // Read as an AG-UI 1.0 client: the only version that gets the `cancelled` outcome.
  const response = await fetch(`${app.agui}/threads/${threadId}`, {
    headers: { 'x-ag-ui-client-version': '1.0.0' },
  })
  const replay = parseSse(await response.text())
  const finished = replay.filter(({ event }) => event.type === 'RUN_FINISHED')
  assert.deepEqual(
    finished.map(({ event }) => event.outcome),
    [{ type: 'cancelled' }]
  )

  // A new client restores it, its end included.
  const restored = await copilotClient(runtime.url, threadId)
  await restored.connect()
  assert.deepEqual(transcript(restored.agent.messages as any[]), stopped)
  assert.equal(restored.events.at(-1)?.type, 'RUN_FINISHED')

  // The next message on the thread is answered, the model sent the kept text.
  await client.send(FOLLOW_UP)
  assert.deepEqual(transcript(client.agent.messages as any[]), [
    ...stopped,
    ['user', FOLLOW_UP],
    ['assistant', STILL_HERE],
  ])
  const prompt = app.held.prompts.at(-1)!
  assert.ok(
    prompt.some((m) => m.role === 'assistant' && JSON.stringify(m.content).includes(PARTIAL)),
    'the model was sent the stopped answer'
  )
  assert.ok(!client.events.some((e) => e.type === 'RUN_ERROR'), 'no run failed')
})

test("a stop from elsewhere (the admin console's) mid-answer: CopilotKit sees its own stopped end, no error", async () => {
  const threadId = thread()
  const client = await copilotClient(runtime.url, threadId)
  const errors: string[] = []
  client.core.subscribe({ onError: ({ error }: any) => void errors.push(error.message) } as any)
  const running = client.send(HOLD)
  const holds = app.held.holds.length
  try {
    await until(() => app.held.holds.length === holds + 1, 'the held answer')
    await until(() => client.events.some((e) => e.type === 'TEXT_MESSAGE_CONTENT'), 'its text')
    const db = await app.app.container.make('lucid.db')
    const run = await db.from('agent_agui_runs').where('thread_id', threadId).first()
    const stopped = await app.agentStream.control.stop(run.stream_run_id, {
      principal: DEMO_USER,
      via: 'admin',
    })
    assert.equal(stopped.status, 'cancelled')
    await running
  } finally {
    app.held.release()
  }
  assert.equal(app.held.holds[holds].aborted, true, "the agent's signal aborted")
  assert.equal(client.events.at(-1).type, 'RUN_FINISHED')
  assert.ok(!client.events.some((e) => e.type === 'RUN_ERROR'), 'no run failed')
  assert.deepEqual(errors, [])
  assert.deepEqual(transcript(client.agent.messages as any[]), [
    ['user', HOLD],
    ['assistant', PARTIAL],
  ])
})

import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { DEMO_USER } from '../../../demo/server.ts'
import { copilotClient, copilotRuntime, demo, firstOptions, transcript, until } from './harness.ts'

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

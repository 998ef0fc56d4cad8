import { test } from '@japa/runner'
import { type BaseMessage, type ToolMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { MemorySaver } from '@langchain/langgraph'
import { createAgent, humanInTheLoopMiddleware } from 'langchain'
import { z } from 'zod'
import { emailReply } from '../demo/agents/langgraph.js'
import { PromptedChatModel } from '../demo/agents/langgraph_model.js'
import { InvalidDecisionError } from '../src/errors.js'
import { langGraphAgent } from '../src/runners/langgraph/index.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf } from './helpers/sink.js'
import { decider, events, started } from './helpers/langgraph.js'

type Decision = 'approve' | 'edit' | 'reject'

/**
 * The email scenario as a LangChain v1 agent (`createAgent`) whose send_email waits for a person
 * through LangChain's own `humanInTheLoopMiddleware` (`allowed`: its review's decisions).
 */
function emailAgent(allowed: Decision[] = ['approve', 'edit', 'reject']) {
  const sent: unknown[] = []
  const errors: unknown[] = []
  const model = new PromptedChatModel(emailReply)
  const sendEmail = tool(
    async (input: { to: string }) => {
      sent.push(input)
      return { sent: true }
    },
    { name: 'send_email', description: 'Send an email', schema: z.object({ to: z.string() }) }
  )
  const agent = createAgent({
    model,
    tools: [sendEmail],
    middleware: [
      humanInTheLoopMiddleware({ interruptOn: { send_email: { allowedDecisions: allowed } } }),
    ],
    checkpointer: new MemorySaver(),
  })
  const runner = langGraphAgent({
    graph: agent.graph,
    onError: (error) => errors.push(error),
  })
  return { sent, errors, model, runner }
}

const toolMessage = (prompt: BaseMessage[]) =>
  prompt.find((m) => m.type === 'tool') as ToolMessage | undefined

test.group("LangGraph runner | LangChain's humanInTheLoopMiddleware (createAgent)", () => {
  test('the request parks one approval keyed by the call id; approved, the tool runs once', async ({
    assert,
  }) => {
    const { sent, errors, runner } = emailAgent()
    const stack = await setupRunner(runner)
    const { id, outcome } = await started(stack, 'Send the weekly report')
    assert.equal(outcome.status, 'parked')
    const parked: any[] = await collect(stack.sink.subscribe(id))
    const approvals = parked.filter((f) => f.t === 'approval')
    assert.lengthOf(approvals, 1)
    assert.deepInclude(approvals[0], {
      id: 'call_1',
      toolName: 'send_email',
      input: { to: 'team@example.com' },
    })
    assert.notProperty(approvals[0], 'inputSchema')
    assert.lengthOf(sent, 0)
    await stack.parking.decisions.approve(id, 'call_1', decider)
    await stack.driver.settled()
    assert.deepEqual(sent, [{ to: 'team@example.com' }])
    assert.deepEqual(errors, [])
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.deepEqual(
      events(frames, 'tool-output').map((e) => e.id),
      ['call_1']
    )
  }).timeout(15_000)

  test('an edit: the tool runs with the edited input', async ({ assert }) => {
    const { sent, errors, runner } = emailAgent()
    const stack = await setupRunner(runner)
    const { id } = await started(stack, 'Send the weekly report')
    await stack.parking.decisions.approve(id, 'call_1', decider, {
      input: { to: 'boss@example.com' },
    })
    await stack.driver.settled()
    assert.deepEqual(sent, [{ to: 'boss@example.com' }])
    assert.deepEqual(errors, [])
    assert.equal(textOf(await collect(stack.sink.subscribe(id))), 'I will send it. Sent.')
  }).timeout(15_000)

  test("a rejection: the tool never runs, the model gets the person's reason", async ({
    assert,
  }) => {
    const { sent, errors, model, runner } = emailAgent()
    const stack = await setupRunner(runner)
    const { id } = await started(stack, 'Send the weekly report')
    await stack.parking.decisions.reject(id, 'call_1', decider, { reason: 'Not this week.' })
    await stack.driver.settled()
    assert.lengthOf(sent, 0)
    assert.deepEqual(errors, [])
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Not sent.')
    assert.lengthOf(events(frames, 'tool-output-denied'), 1)
    assert.equal(toolMessage(model.calls.at(-1)!)?.text, 'Not this week.')
  }).timeout(15_000)

  test("a review without 'edit': the frame allows no edited input (refused, 422); approved, the model's input", async ({
    assert,
  }) => {
    const { sent, errors, runner } = emailAgent(['approve', 'reject'])
    const stack = await setupRunner(runner)
    const { id } = await started(stack, 'Send the weekly report')
    const approval = (await collect(stack.sink.subscribe(id))).find((f: any) => f.t === 'approval')
    assert.strictEqual((approval as any).inputSchema, false)
    await assert.rejects(
      () =>
        stack.parking.decisions.approve(id, 'call_1', decider, {
          input: { to: 'boss@example.com' },
        }),
      InvalidDecisionError
    )
    await stack.parking.decisions.approve(id, 'call_1', decider)
    await stack.driver.settled()
    assert.deepEqual(sent, [{ to: 'team@example.com' }])
    assert.deepEqual(errors, [])
  }).timeout(15_000)

  test("a review without 'reject', rejected: the run ends, nothing runs; the next turn answers the call", async ({
    assert,
  }) => {
    const { sent, errors, model, runner } = emailAgent(['approve', 'edit'])
    const stack = await setupRunner(runner)
    const thread = runId('thread')
    const one = await started(stack, 'Send the weekly report', thread)
    await stack.parking.decisions.reject(one.id, 'call_1', decider, { reason: 'No.' })
    await stack.driver.settled()
    assert.lengthOf(sent, 0)
    // The middleware was never handed a decision it throws on.
    assert.deepEqual(errors, [])
    const frames: any[] = await collect(stack.sink.subscribe(one.id))
    assert.notInclude(
      frames.map((f) => f.t),
      'error'
    )
    const two = await started(stack, 'What did I ask?', thread)
    assert.equal(two.outcome.status, 'finished')
    assert.equal(
      textOf(await collect(stack.sink.subscribe(two.id))),
      'You asked: Send the weekly report / What did I ask?'
    )
    const prompt = model.calls.at(-1)!
    assert.deepEqual(
      prompt.map((m) => m.type),
      ['human', 'ai', 'tool', 'human']
    )
    assert.equal((prompt[2] as ToolMessage).tool_call_id, 'call_1')
    assert.lengthOf(sent, 0)
  }).timeout(15_000)
})

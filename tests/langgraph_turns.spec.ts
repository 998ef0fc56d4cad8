import { test } from '@japa/runner'
import { HumanMessage, type BaseMessage, type ToolMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph'
import { ToolNode } from '@langchain/langgraph/prebuilt'
import { z } from 'zod'
import { langGraphAgent, REJECTION_MESSAGES } from '../src/runners/langgraph/index.js'
import { PromptedChatModel } from '../demo/agents/langgraph_model.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf } from './helpers/sink.js'
import { alice, decider, started } from './helpers/langgraph.js'

/** "You asked: " and every person message of the prompt; "hold" calls the `slow` tool. */
const asked = (messages: BaseMessage[]) => {
  const said = messages.filter((m) => HumanMessage.isInstance(m)).map((m) => m.text)
  const last = messages.at(-1)
  if (last && HumanMessage.isInstance(last) && last.text === 'hold') {
    return { toolCalls: [{ id: 'call_h', name: 'slow', args: {} }] }
  }
  return { text: `You asked: ${said.join(' / ')}` }
}

/** A graph whose `slow` tool holds until the run is stopped (`entered` once it runs). */
function heldGraph() {
  let enter!: () => void
  const entered = new Promise<void>((resolve) => (enter = resolve))
  const slow = tool(
    async (_input, config) => {
      enter()
      await new Promise<void>((resolve) =>
        config.signal?.addEventListener('abort', () => resolve())
      )
      return 'late'
    },
    { name: 'slow', description: 'Takes a while', schema: z.object({}) }
  )
  const model = new PromptedChatModel(asked)
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode([slow]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (state) => {
      const last = state.messages.at(-1) as { tool_calls?: unknown[] } | undefined
      return last?.tool_calls?.length ? 'tools' : END
    })
    .addEdge('tools', 'agent')
    .compile({ checkpointer: new MemorySaver() })
  return { graph, model, entered }
}

const bounded = <T>(promise: Promise<T>, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no ${what}`)), 5_000)),
  ])

test.group('LangGraph runner, turns of a thread', () => {
  test('a stop while a tool runs: the next turn gives the call a result before the new message', async ({
    assert,
  }) => {
    const { graph, model, entered } = heldGraph()
    const stack = await setupRunner(langGraphAgent({ graph }))
    const thread = runId('thread')
    const id = runId('lg-held')
    await stack.driver.start({
      runId: id,
      threadId: thread,
      input: { message: 'hold', context: [] },
      principal: alice,
    })
    await bounded(entered, 'tool run')
    assert.equal((await stack.control.stop(id, decider)).status, 'cancelled')
    await stack.driver.settled()
    // The thread's state now ends with the unanswered call (next: tools, no interrupt).
    const state = await graph.getState({ configurable: { thread_id: thread } })
    assert.deepEqual(state.next, ['tools'])
    assert.lengthOf(
      state.tasks.flatMap((task) => task.interrupts),
      0
    )

    const two = await started(stack, 'What did I ask?', thread)
    assert.equal(two.outcome.status, 'finished')
    assert.equal(
      textOf(await collect(stack.sink.subscribe(two.id))),
      'You asked: hold / What did I ask?'
    )
    const prompt = model.calls.at(-1)!
    assert.deepEqual(
      prompt.map((m) => m.type),
      ['human', 'ai', 'tool', 'human']
    )
    assert.equal((prompt[2] as ToolMessage).tool_call_id, 'call_h')
    assert.equal(prompt[2].text, REJECTION_MESSAGES.stopped)
  }).timeout(15_000)

  test('a tools node that throws: the run fails, the next turn gives the call a result first', async ({
    assert,
  }) => {
    const model = new PromptedChatModel(asked)
    const errors: unknown[] = []
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
      .addNode('tools', () => {
        throw new Error('the tool broke')
      })
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', (state) => {
        const last = state.messages.at(-1) as { tool_calls?: unknown[] } | undefined
        return last?.tool_calls?.length ? 'tools' : END
      })
      .addEdge('tools', 'agent')
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph, onError: (e) => errors.push(e) }))
    const thread = runId('thread')
    const one = await started(stack, 'hold', thread)
    assert.deepEqual(one.outcome, { status: 'failed', code: 'run_failed' })
    assert.lengthOf(errors, 1)
    const two = await started(stack, 'What did I ask?', thread)
    assert.equal(two.outcome.status, 'finished')
    const prompt = model.calls.at(-1)!
    assert.deepEqual(
      prompt.map((m) => m.type),
      ['human', 'ai', 'tool', 'human']
    )
    assert.equal((prompt[2] as ToolMessage).tool_call_id, 'call_h')
  }).timeout(15_000)

  test("a person's message re-sent with its id (a regenerate, an AG-UI transcript) follows the earlier turn", async ({
    assert,
  }) => {
    const model = new PromptedChatModel(asked)
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
      .addEdge(START, 'agent')
      .addEdge('agent', END)
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph }))
    const thread = runId('thread')
    const turn = async (text: string) => {
      const id = runId('lg-same')
      const outcome = await (
        await stack.driver.start({
          runId: id,
          threadId: thread,
          input: { message: text, context: [] },
          principal: alice,
          userMessage: { id: 'msg-1', parts: [{ type: 'text', text }] },
        })
      ).done
      assert.equal(outcome.status, 'finished')
      return textOf(await collect(stack.sink.subscribe(id)))
    }
    assert.equal(await turn('Hello'), 'You asked: Hello')
    assert.equal(await turn('Hello again'), 'You asked: Hello / Hello again')
    assert.deepEqual(
      model.calls.at(-1)!.map((m) => m.type),
      ['human', 'ai', 'human']
    )
  }).timeout(15_000)
})

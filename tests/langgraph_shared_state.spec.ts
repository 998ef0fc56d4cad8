import { test } from '@japa/runner'
import { AIMessage } from '@langchain/core/messages'
import {
  Annotation,
  END,
  interrupt,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
} from '@langchain/langgraph'
import { langGraphAgent } from '../src/runners/langgraph/index.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId } from './helpers/sink.js'
import { alice, decider, events } from './helpers/langgraph.js'

/**
 * LangGraph shared state (`stateKeys`), as a CopilotKit app moving from LangGraph's AG-UI
 * integration has it: the listed keys of the graph's state are written as `state` snapshots
 * when they change; the page's state (`ctx.input.state`) of those keys goes into the graph's
 * input, and into the resume `Command`'s `update` when the page sends one with its answer.
 */

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  recipe: Annotation<string>(),
  steps: Annotation<string[]>(),
  secret: Annotation<string>(),
})

function recipeGraph() {
  return new StateGraph(State)
    .addNode('plan', (state) => ({
      steps: ['chop', `buy ${state.recipe}`],
      secret: 'kept by the graph',
      messages: [new AIMessage('Planned.')],
    }))
    .addNode('confirm', (state) => {
      const ok = interrupt('Cook it?')
      return { steps: [...state.steps, `${ok} cook ${state.recipe}`] }
    })
    .addEdge(START, 'plan')
    .addEdge('plan', 'confirm')
    .addEdge('confirm', END)
    .compile({ checkpointer: new MemorySaver() })
}

test.group('LangGraph runner | shared state (stateKeys)', () => {
  test('the listed keys stream as state snapshots; the page state goes into the input and the resume update', async ({
    assert,
  }) => {
    const graph = recipeGraph()
    const stack = await setupRunner(langGraphAgent({ graph, stateKeys: ['recipe', 'steps'] }))
    const id = runId('lg')
    // The page sends a key that is not listed (`messages`): it never reaches the graph.
    const state = { recipe: 'soup', messages: 'not a list' }
    await (
      await stack.driver.start({
        runId: id,
        input: { message: 'Plan it', context: [], state },
        principal: alice,
      })
    ).done
    let frames: any[] = await collect(stack.sink.subscribe(id))
    const first = events(frames, 'state').map((event) => event.snapshot)
    assert.deepEqual(first, [{ recipe: 'soup' }, { recipe: 'soup', steps: ['chop', 'buy soup'] }])
    const asked = frames.find((f) => f.t === 'elicitation')
    const question = asked.request.questions[0].id

    // The page edits the recipe and answers: the decision carries its state (as the doors'
    // resume and approval response do), the graph's update.
    await stack.parking.decisions.decideAll(
      [
        {
          runId: id,
          itemId: asked.id,
          park: asked.park,
          verb: 'answer',
          body: { answers: { [question]: ['yes'] } },
        },
      ],
      decider,
      { pageState: { recipe: 'stew', secret: 'from the page' } }
    )
    await stack.driver.settled()
    frames = await collect(stack.sink.subscribe(id))
    const all = events(frames, 'state').map((event) => event.snapshot)
    assert.deepEqual(all.at(-1), { recipe: 'stew', steps: ['chop', 'buy soup', 'yes cook stew'] })
    // Only listed keys cross, either way.
    assert.notInclude(JSON.stringify(all), 'secret')
    const values = (await graph.getState({ configurable: { thread_id: id } })).values as any
    assert.equal(values.secret, 'kept by the graph')
    assert.isArray(values.messages)
  }).timeout(15_000)

  test('without stateKeys nothing is shared: no state frames, the page state is not the graph input', async ({
    assert,
  }) => {
    const graph = recipeGraph()
    const stack = await setupRunner(langGraphAgent({ graph }))
    const id = runId('lg')
    await (
      await stack.driver.start({
        runId: id,
        input: { message: 'Plan it', context: [], state: { recipe: 'soup' } },
        principal: alice,
      })
    ).done
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.lengthOf(events(frames, 'state'), 0)
    const values = (await graph.getState({ configurable: { thread_id: id } })).values as any
    assert.isUndefined(values.recipe)
  }).timeout(15_000)
})

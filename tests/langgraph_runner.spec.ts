import { test } from '@japa/runner'
import { AIMessage, type BaseMessage } from '@langchain/core/messages'
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import { langGraphAgent, REJECTION_MESSAGES } from '../src/runners/langgraph/index.js'
import { CheckpointUnreadableError } from '../src/runners/langgraph/checkpointer_errors.js'
import { emailGraph } from '../demo/agents/langgraph.js'
import { askApproval, setupReplica, setupRunner } from './helpers/parking.js'
import { collect, runId, textOf, waitUntil } from './helpers/sink.js'
import { alice, decider, email, events, kinds, started } from './helpers/langgraph.js'

test.group('LangGraph runner', () => {
  test('the email scenario: text, tool call, approval; approved, the tool runs once', async ({
    assert,
  }) => {
    const { sent, model, graph } = email()
    const stack = await setupRunner(langGraphAgent({ graph, actions: ['send_email'] }))
    const { id, outcome } = await started(stack, 'Send the weekly report')
    assert.equal(outcome.status, 'parked')
    assert.deepInclude((outcome as any).checkpoint, { runner: 'langgraph', thread_id: id })
    assert.isString((outcome as any).checkpoint.checkpoint_id)
    assert.lengthOf(sent, 0)
    const parked: any[] = await collect(stack.sink.subscribe(id))
    assert.deepEqual(kinds(parked), [
      'tool-input-start',
      'tool-input-delta',
      'tool-input-delta',
      'tool-input-available',
      'approval',
    ])
    assert.equal(textOf(parked), 'I will send it. ')
    assert.deepInclude(parked.at(-1), {
      t: 'approval',
      runId: id,
      id: 'call_1',
      toolName: 'send_email',
      input: { to: 'team@example.com' },
      approver: 'requester',
    })
    assert.deepInclude(events(parked, 'tool-input-available')[0], {
      id: 'call_1',
      toolKind: 'action',
      input: { to: 'team@example.com' },
    })

    await stack.parking.decisions.approve(id, 'call_1', decider)
    await stack.driver.settled()
    assert.deepEqual(sent, [{ to: 'team@example.com' }])
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.deepEqual(
      events(frames, 'tool-output').map((e) => [e.id, e.output]),
      [['call_1', { sent: true }]]
    )
    // The model was called twice; the second time with the call's result after it.
    assert.lengthOf(model.calls, 2)
    assert.deepEqual(
      model.calls[1].map((m: BaseMessage) => m.type),
      ['human', 'ai', 'tool']
    )
  }).timeout(15_000)

  test('an edited input: the tool runs with it (an edit decision)', async ({ assert }) => {
    const { sent, graph } = email()
    const stack = await setupRunner(langGraphAgent({ graph }))
    const { id } = await started(stack, 'Send the weekly report')
    await stack.parking.decisions.approve(id, 'call_1', decider, {
      input: { to: 'boss@example.com' },
    })
    await stack.driver.settled()
    assert.deepEqual(sent, [{ to: 'boss@example.com' }])
    assert.equal(textOf(await collect(stack.sink.subscribe(id))), 'I will send it. Sent.')
  }).timeout(15_000)

  test('a rejection: the tool never runs, the node gets the reason, one denial', async ({
    assert,
  }) => {
    const { sent, model, graph } = email()
    const stack = await setupRunner(langGraphAgent({ graph }))
    const { id } = await started(stack, 'Send the weekly report')
    await stack.parking.decisions.reject(id, 'call_1', decider, { reason: 'Not this week.' })
    await stack.driver.settled()
    assert.lengthOf(sent, 0)
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Not sent.')
    assert.lengthOf(events(frames, 'tool-output-denied'), 1)
    assert.lengthOf(events(frames, 'tool-output'), 0)
    assert.equal(model.calls[1].at(-1)!.text, 'Not sent: Not this week.')
  }).timeout(15_000)

  test('a multi-turn thread: one LangGraph thread per thread, the graph state has the earlier turn', async ({
    assert,
  }) => {
    const { graph } = email()
    const stack = await setupRunner(langGraphAgent({ graph }))
    const thread = runId('thread')
    const one = await started(stack, 'Hello there', thread)
    assert.equal(one.outcome.status, 'finished')
    const two = await started(stack, 'What did I ask?', thread)
    assert.equal(
      textOf(await collect(stack.sink.subscribe(two.id))),
      'You asked: Hello there / What did I ask?'
    )
  }).timeout(15_000)

  test('a park cancelled: the next turn gives the paused call a result before the new message', async ({
    assert,
  }) => {
    const { sent, model, graph } = email()
    const stack = await setupRunner(langGraphAgent({ graph }))
    const thread = runId('thread')
    const one = await started(stack, 'Send the weekly report', thread)
    await stack.parking.decisions.cancel(one.id, decider)
    await stack.driver.settled()
    const two = await started(stack, 'What did I ask?', thread)
    assert.equal(
      textOf(await collect(stack.sink.subscribe(two.id))),
      'You asked: Send the weekly report / What did I ask?'
    )
    assert.lengthOf(sent, 0)
    const prompt = model.calls.at(-1)!
    assert.deepEqual(
      prompt.map((m: BaseMessage) => m.type),
      ['human', 'ai', 'tool', 'human']
    )
    assert.equal(prompt[2].text, REJECTION_MESSAGES.cancelled)
  }).timeout(15_000)

  test('custom chunks: a typed event by default, JSON only; a mapper makes frames of its own', async ({
    assert,
  }) => {
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('work', (_state, config) => {
        config.writer?.({ progress: 50 })
        config.writer?.(() => 'not JSON')
        return { messages: [new AIMessage('Done.')] }
      })
      .addEdge(START, 'work')
      .addEdge('work', END)
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph }))
    const { id, outcome } = await started(stack, 'Work')
    assert.deepEqual(outcome, { status: 'finished' })
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.deepEqual(events(frames, 'langgraph-custom'), [
      { kind: 'langgraph-custom', data: { progress: 50 } },
    ])
    assert.equal(textOf(frames), 'Done.')

    const mapped = await setupRunner(
      langGraphAgent({
        graph,
        custom: (chunk) =>
          typeof chunk === 'object' ? { t: 'component', name: 'progress', data: chunk } : null,
      })
    )
    const second = await started(mapped, 'Work')
    const own: any[] = await collect(mapped.sink.subscribe(second.id))
    assert.deepEqual(
      own.filter((f) => f.t === 'component').map((f) => [f.name, f.data]),
      [['progress', { progress: 50 }]]
    )
    assert.lengthOf(events(own, 'langgraph-custom'), 0)
  }).timeout(15_000)

  test('chunks the runner does not know are skipped; the run goes on', async ({ assert }) => {
    const junk = [
      'not a tuple',
      ['values', { messages: [] }],
      ['messages', 'not a pair'],
      ['messages', [{ type: 'ai', text: 'forged' }, {}]],
      ['updates', null],
      ['updates', { node: { messages: [42, null, { tool_call_id: 'x' }] } }],
      ['updates', { __interrupt__: [{ value: 'no id' }] }],
      ['debug', { anything: true }],
      [1, 2],
      ['messages', [new AIMessage({ id: 'm1', content: 'Still here.' }), {}]],
    ]
    const graph = {
      async stream() {
        return (async function* () {
          yield* junk
        })()
      },
      async getState() {
        return { values: {}, next: [], config: {}, tasks: [] }
      },
    }
    const stack = await setupRunner(langGraphAgent({ graph: graph as any }))
    const { id, outcome } = await started(stack, 'Go')
    assert.deepEqual(outcome, { status: 'finished' })
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.deepEqual(
      frames.map(({ cursor: _c, ...f }) => f),
      [{ t: 'text', v: 'Still here.' }]
    )
  }).timeout(15_000)

  test('a checkpoint that cannot be read fails the run with its fixed sentence', async ({
    assert,
  }) => {
    const errors: unknown[] = []
    const { graph, checkpointer, sent } = email()
    const stack = await setupRunner(langGraphAgent({ graph }))
    // The graph changed: its tool node has another name now (same checkpointer, same thread).
    const changed = new StateGraph(MessagesAnnotation)
      .addNode('agent', () => ({}))
      .addNode('act', () => ({}))
      .addEdge(START, 'agent')
      .addEdge('agent', 'act')
      .addEdge('act', END)
      .compile({ checkpointer })
    const replica = setupReplica(langGraphAgent({ graph: changed, onError: (e) => errors.push(e) }))
    const { id } = await started(stack, 'Send the weekly report')
    await replica.parking.decisions.approve(id, 'call_1', decider)
    await replica.driver.settled()
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.deepInclude(frames.at(-1), {
      t: 'error',
      code: 'checkpoint_unreadable',
      message: "The run's checkpoint could not be read: the agent changed since the run paused.",
    })
    assert.equal(FAILURE_SENTENCES.checkpoint_unreadable, frames.at(-1).message)
    assert.lengthOf(sent, 0)

    // No such checkpoint: another checkpointer (the graph's state is not there).
    const elsewhere = setupReplica(langGraphAgent({ graph: email().graph }))
    const second = await started(stack, 'Send the weekly report')
    await elsewhere.parking.decisions.approve(second.id, 'call_1', decider)
    await elsewhere.driver.settled()
    const again: any[] = await collect(stack.sink.subscribe(second.id))
    assert.equal(again.at(-1).code, 'checkpoint_unreadable')
    assert.lengthOf(sent, 0)
  }).timeout(15_000)

  test('a checkpoint of another shape (another runner, an old version) fails the same way', async ({
    assert,
  }) => {
    const runner = langGraphAgent({ graph: email().graph })
    const stack = await setupRunner({ start: askApproval, resume: (ctx) => runner.resume(ctx) })
    const { id } = await started(stack, 'Pay')
    await stack.parking.decisions.approve(id, 'call_1', decider)
    await stack.driver.settled()
    const frames: any[] = await collect(stack.sink.subscribe(id))
    assert.deepInclude(frames.at(-1), {
      t: 'error',
      code: 'checkpoint_unreadable',
      message: FAILURE_SENTENCES.checkpoint_unreadable,
    })
  }).timeout(15_000)

  test("a thread's stored state the checkpointer can no longer read: the next turn and a resume fail the same way", async ({
    assert,
  }) => {
    /** A checkpointer whose rows stop deserializing when `broken` (as LucidSaver reports it). */
    class Breaking extends MemorySaver {
      broken = false
      async getTuple(config: Parameters<MemorySaver['getTuple']>[0]) {
        if (this.broken) throw new CheckpointUnreadableError({ cause: new Error('bad bytes') })
        return super.getTuple(config)
      }
    }
    const checkpointer = new Breaking()
    const sent: unknown[] = []
    const graph = emailGraph({ checkpointer, onSend: (input) => sent.push(input) })
    const errors: unknown[] = []
    const stack = await setupRunner(langGraphAgent({ graph, onError: (e) => errors.push(e) }))
    const thread = runId('thread')
    const parked = await started(stack, 'Send the weekly report', thread)
    const asked = await started(stack, 'Hello', runId('thread'))
    assert.equal(asked.outcome.status, 'finished')
    checkpointer.broken = true
    await stack.parking.decisions.approve(parked.id, 'call_1', decider)
    await stack.driver.settled()
    const frames: any[] = await collect(stack.sink.subscribe(parked.id))
    assert.equal(frames.at(-1).code, 'checkpoint_unreadable')
    const next = await started(stack, 'What did I ask?', thread)
    assert.deepEqual(next.outcome, { status: 'failed', code: 'checkpoint_unreadable' })
    assert.lengthOf(sent, 0)
    assert.isAtLeast(errors.length, 2)
    assert.notInclude(JSON.stringify(frames), 'bad bytes')
  }).timeout(15_000)

  test('a stop mid-answer: the graph is aborted, what was said stays, the run ends cancelled', async ({
    assert,
  }) => {
    let aborted = false
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('talk', async (_state, config) => {
        config.writer?.({ said: 'Hello' })
        await new Promise<void>((resolve) => {
          config.signal?.addEventListener('abort', () => {
            aborted = true
            resolve()
          })
        })
        return { messages: [new AIMessage('never')] }
      })
      .addEdge(START, 'talk')
      .addEdge('talk', END)
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph }))
    const id = runId('lg-stop')
    await stack.door.startRun(
      { runId: id, threadId: `${id}-t`, ownerId: alice.id, clientTools: [], inputMessage: null },
      { message: 'hi' },
      alice
    )
    const stored = async () => (await collect(stack.sink.replay(id) as AsyncIterable<any>)) as any[]
    await waitUntil(
      async () => (await stored()).some((f) => f.event?.kind === 'langgraph-custom'),
      'the custom event'
    )
    const outcome = await stack.control.stop(id, decider)
    assert.equal(outcome.status, 'cancelled')
    await stack.driver.settled()
    assert.isTrue(aborted)
    const frames = await stored()
    assert.include(kinds(frames), 'cancelled')
    assert.notInclude(JSON.stringify(frames), 'never')
  }).timeout(15_000)
})

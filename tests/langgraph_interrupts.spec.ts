import { test } from '@japa/runner'
import { type AIMessage } from '@langchain/core/messages'
import {
  Annotation,
  END,
  interrupt,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
} from '@langchain/langgraph'
import { z } from 'zod'
import { PromptedChatModel } from '../demo/agents/langgraph_model.js'
import { InvalidDecisionError } from '../src/errors.js'
import { langGraphAgent, REJECTION_MESSAGES } from '../src/runners/langgraph/index.js'
import { refusedDecisions } from '../src/runners/langgraph/resume_values.js'
import { setupRunner } from './helpers/parking.js'
import { collect } from './helpers/sink.js'
import { decider, started } from './helpers/langgraph.js'

/** One interrupt per node, two nodes in parallel: `{ a, b }` hold what each was resumed with. */
const Parallel = Annotation.Root({
  a: Annotation<unknown>(),
  b: Annotation<unknown>(),
})

test.group('LangGraph runner | interrupts', () => {
  test('several interrupts open at once: one item each, each resumed by its interrupt id', async ({
    assert,
  }) => {
    const graph = new StateGraph(Parallel)
      .addNode('pay', () => ({
        a: interrupt({ toolCallId: 'call_a', name: 'pay', input: { n: 1 } }),
      }))
      .addNode('refer', () => ({ b: interrupt('What is the reference?') }))
      .addEdge(START, 'pay')
      .addEdge(START, 'refer')
      .addEdge('pay', END)
      .addEdge('refer', END)
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph }))
    const { id, outcome } = await started(stack, 'Go')
    assert.equal(outcome.status, 'parked')
    const parked: any[] = await collect(stack.sink.subscribe(id))
    const approval = parked.find((f) => f.t === 'approval')
    const asked = parked.find((f) => f.t === 'elicitation')
    assert.deepInclude(approval, { id: 'call_a', toolName: 'pay', input: { n: 1 } })
    const interrupts = (outcome as any).checkpoint.interrupts
    assert.equal(asked.id, interrupts[asked.id].interrupt)
    assert.notEqual(interrupts.call_a.interrupt, asked.id)
    assert.deepEqual(asked.request.questions, [
      { id: 'answer', prompt: 'What is the reference?', options: [], allowFreeText: true },
    ])
    await stack.parking.decisions.answer(id, asked.id, decider, { answers: { answer: ['REF-9'] } })
    await stack.parking.decisions.reject(id, 'call_a', decider)
    await stack.driver.settled()
    const state = await graph.getState({ configurable: { thread_id: id } })
    assert.deepEqual(state.values, {
      a: { type: 'reject', message: REJECTION_MESSAGES.rejected },
      b: 'REF-9',
    })
    assert.lengthOf(state.tasks, 0)
  }).timeout(15_000)

  test('a question set interrupt: an elicitation with its questions, the node gets the answers', async ({
    assert,
  }) => {
    const State = Annotation.Root({ answers: Annotation<unknown>(), ok: Annotation<unknown>() })
    const questions = [
      {
        id: 'format',
        prompt: 'Which format?',
        options: [
          { value: 'pdf', label: 'PDF' },
          { value: 'csv', label: 'CSV' },
        ],
      },
    ]
    const graph = new StateGraph(State)
      .addNode('ask', () => ({
        // A question of the app's own shape: an option without its label, a field of its own.
        answers: interrupt({
          preamble: 'One question.',
          questions: [
            ...questions,
            { id: 'when', prompt: 'When?', options: [{ value: 'now' }], tone: 'x' },
          ],
        }),
      }))
      .addNode('confirm', () => ({
        ok: interrupt('Send it now?', { responseSchema: z.boolean() }),
      }))
      .addEdge(START, 'ask')
      .addEdge('ask', 'confirm')
      .addEdge('confirm', END)
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph }))
    const { id } = await started(stack, 'Make the report')
    let frames: any[] = await collect(stack.sink.subscribe(id))
    const asked = frames.find((f) => f.t === 'elicitation')
    assert.deepEqual(asked.request, {
      id: asked.id,
      source: 'ask',
      preamble: 'One question.',
      questions: [
        ...questions,
        { id: 'when', prompt: 'When?', options: [{ value: 'now', label: 'now' }] },
      ],
    })
    await stack.parking.decisions.answer(id, asked.id, decider, { answers: { format: ['csv'] } })
    await stack.driver.settled()
    // The second interrupt: a boolean response schema is a yes/no question.
    frames = await collect(stack.sink.subscribe(id))
    const confirm = frames.filter((f) => f.t === 'elicitation').at(-1)
    assert.notEqual(confirm.id, asked.id)
    assert.deepEqual(
      confirm.request.questions[0].options.map((o: any) => o.value),
      ['yes', 'no']
    )
    await stack.parking.decisions.answer(id, confirm.id, decider, { answers: { answer: ['yes'] } })
    await stack.driver.settled()
    const state = await graph.getState({ configurable: { thread_id: id } })
    assert.deepEqual(state.values, {
      answers: { answers: { format: ['csv'], when: [] }, skipped: false },
      ok: true,
    })
  }).timeout(15_000)

  test("a request of the shape LangChain's HITL middleware sends: one approval per action, keyed by the model's call ids", async ({
    assert,
  }) => {
    const model = new PromptedChatModel(() => ({
      toolCalls: [
        { id: 'call_x', name: 'send_email', args: { to: 'x@example.com' } },
        { id: 'call_y', name: 'send_email', args: { to: 'y@example.com' } },
      ],
    }))
    let resumed: unknown
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('model', async (state) => ({ messages: [await model.invoke(state.messages)] }))
      .addNode('review', (state) => {
        const last = state.messages.at(-1) as AIMessage
        resumed = interrupt({
          actionRequests: last.tool_calls!.map((c) => ({ name: c.name, args: c.args })),
          reviewConfigs: [
            {
              actionName: 'send_email',
              allowedDecisions: ['approve', 'edit', 'reject'],
              argsSchema: { type: 'object', properties: { to: { type: 'string' } } },
            },
          ],
        })
        return {}
      })
      .addEdge(START, 'model')
      .addEdge('model', 'review')
      .addEdge('review', END)
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph }))
    const { id } = await started(stack, 'Send both')
    const parked: any[] = await collect(stack.sink.subscribe(id))
    const approvals = parked.filter((f) => f.t === 'approval')
    assert.deepEqual(
      approvals.map((a) => [a.id, a.input]),
      [
        ['call_x', { to: 'x@example.com' }],
        ['call_y', { to: 'y@example.com' }],
      ]
    )
    assert.deepEqual(approvals[0].inputSchema, {
      type: 'object',
      properties: { to: { type: 'string' } },
    })
    await stack.parking.decisions.approve(id, 'call_x', decider, { input: { to: 'z@example.com' } })
    await stack.parking.decisions.reject(id, 'call_y', decider, { reason: 'Not him.' })
    await stack.driver.settled()
    assert.deepEqual(resumed, {
      decisions: [
        { type: 'edit', editedAction: { name: 'send_email', args: { to: 'z@example.com' } } },
        { type: 'reject', message: 'Not him.' },
      ],
    })
  }).timeout(15_000)

  test("LangGraph's Agent Inbox request (HumanInterrupt): an approval; accept, edit, response", async ({
    assert,
  }) => {
    const State = Annotation.Root({ got: Annotation<unknown[]>() })
    const request = (to: string, allow: boolean) => ({
      action_request: { action: 'send_email', args: { to } },
      config: { allow_accept: true, allow_edit: allow, allow_respond: allow, allow_ignore: true },
      description: `Send to ${to}?`,
    })
    const graph = new StateGraph(State)
      .addNode('inbox', () => {
        // Two interrupts in one node: a list of one request, then one request alone.
        const first = interrupt([request('a@example.com', true)])
        const second = interrupt(request('b@example.com', false))
        return { got: [first, second] }
      })
      .addEdge(START, 'inbox')
      .addEdge('inbox', END)
      .compile({ checkpointer: new MemorySaver() })
    const stack = await setupRunner(langGraphAgent({ graph }))
    const { id } = await started(stack, 'Send')
    let frames: any[] = await collect(stack.sink.subscribe(id))
    const first = frames.find((f) => f.t === 'approval')
    assert.deepInclude(first, { toolName: 'send_email', input: { to: 'a@example.com' } })
    assert.deepEqual(first.confirmation, {
      title: 'Run send_email?',
      description: 'Send to a@example.com?',
    })
    await stack.parking.decisions.approve(id, first.id, decider, { input: { to: 'z@example.com' } })
    await stack.driver.settled()
    frames = await collect(stack.sink.subscribe(id))
    const second = frames.filter((f) => f.t === 'approval').at(-1)
    assert.notEqual(second.id, first.id)
    // allow_edit: false: no edited input fits its frame (refused up front, 422).
    assert.notProperty(first, 'inputSchema')
    assert.strictEqual(second.inputSchema, false)
    await assert.rejects(
      () => stack.parking.decisions.approve(id, second.id, decider, { input: { to: 'c@x.com' } }),
      InvalidDecisionError
    )
    await stack.parking.decisions.reject(id, second.id, decider, { reason: 'No.' })
    await stack.driver.settled()
    const state = await graph.getState({ configurable: { thread_id: id } })
    assert.deepEqual(state.values.got, [
      [{ type: 'edit', args: { action: 'send_email', args: { to: 'z@example.com' } } }],
      { type: 'ignore', args: null },
    ])
  }).timeout(15_000)

  test('a decision its request does not allow (an approval parked before edits were refused) is refused, never run as asked', ({
    assert,
  }) => {
    const parked = {
      call_a: {
        interrupt: 'i1',
        as: 'hitl' as const,
        name: 'send',
        input: { to: 'a' },
        index: 0,
        count: 2,
        allowed: ['approve', 'reject'],
      },
      call_b: {
        interrupt: 'i1',
        as: 'hitl' as const,
        name: 'send',
        input: { to: 'b' },
        index: 1,
        count: 2,
        allowed: ['approve', 'edit'],
      },
      call_c: {
        interrupt: 'i2',
        as: 'inbox' as const,
        name: 'send',
        input: { to: 'c' },
        allowed: [],
      },
    }
    const item = (id: string, status: 'approved' | 'rejected', input?: unknown) => ({
      kind: 'approval' as const,
      id,
      runId: 'r',
      park: 1,
      status,
      decidedBy: 'alice',
      decidedVia: 'api',
      reason: null,
      ...(input ? { input } : {}),
    })
    const asked = [
      item('call_a', 'approved'),
      item('call_b', 'approved'),
      item('call_c', 'approved'),
    ]
    assert.deepEqual(refusedDecisions(parked, asked), [])
    assert.deepEqual(
      refusedDecisions(parked, [
        item('call_a', 'approved', { to: 'z' }),
        item('call_b', 'rejected'),
        item('call_c', 'approved', { to: 'z' }),
      ]),
      ['call_a', 'call_b', 'call_c']
    )
  })
})

import { test } from '@japa/runner'
import { EventSchema } from '@ag-ui/core/schemas'
import { verifyEvents } from '@ag-ui/client'
import { from, lastValueFrom, toArray } from 'rxjs'
import { decodeAgUiId } from '../src/agui/ids.js'
import { FrameTranslator, type AgUiEventRecord as AgUiEvent } from '../src/agui/translate/index.js'
import { TOOL_DECLINED_SENTENCE, TOOL_FAILED_SENTENCE } from '../src/core/projection.js'
import { parseCursor } from '../src/core/cursor.js'
import type { DeliveredFrame, StreamFrame } from '../src/core/frames.js'

/** Frames as a stream would store them: each with the cursor of its row. */
function stored(frames: StreamFrame[]): DeliveredFrame[] {
  let text = 0
  return frames.map((frame, i) => {
    const seq = i + 1
    if (frame.t === 'text') text = frame.v.length
    return { ...frame, cursor: frame.t === 'text' ? `${seq}.${text}` : `${seq}` } as DeliveredFrame
  })
}

function translate(
  frames: DeliveredFrame[],
  options: Partial<ConstructorParameters<typeof FrameTranslator>[0]> = {}
) {
  const translator = new FrameTranslator({ streamRunId: 'run-1', ...options })
  const run = { threadId: 't-1', runId: 'run-1' }
  const events: AgUiEvent[] = translator.open(run)
  for (const frame of frames) {
    const { cursor, ...body } = frame
    events.push(...translator.push(body as StreamFrame, parseCursor(cursor)))
    if (translator.terminal === 'failed') return events
  }
  events.push(...translator.close(run))
  return events
}

/** The official checks: every event parses with EventSchema; the sequence passes verifyEvents. */
async function assertConforms(assert: any, events: AgUiEvent[]) {
  for (const event of events) {
    const parsed = EventSchema.safeParse(event)
    assert.isTrue(parsed.success, `${event.type}: ${parsed.success ? '' : parsed.error.message}`)
  }
  const verified = await lastValueFrom(from(events as any[]).pipe(verifyEvents(), toArray()))
  assert.lengthOf(verified, events.length)
}

const run: StreamFrame[] = [
  { t: 'event', event: { kind: 'step-start' } },
  { t: 'text', v: 'Let me look. ' },
  {
    t: 'event',
    event: { kind: 'tool-input-start', id: 'call_1', name: 'search', toolKind: 'read' },
  },
  { t: 'event', event: { kind: 'tool-input-delta', id: 'call_1', delta: '{"q":' } },
  { t: 'event', event: { kind: 'tool-input-delta', id: 'call_1', delta: '"x"}' } },
  {
    t: 'event',
    event: {
      kind: 'tool-input-available',
      id: 'call_1',
      name: 'search',
      input: { q: 'x' },
      toolKind: 'read',
    },
  },
  { t: 'event', event: { kind: 'tool-output', id: 'call_1', output: { hits: 2 } } },
  {
    t: 'event',
    event: {
      kind: 'tool-input-available',
      id: 'call_2',
      name: 'fetch',
      input: { u: 1 },
      toolKind: 'read',
    },
  },
  {
    t: 'event',
    event: {
      kind: 'tool-output-error',
      id: 'call_2',
      error: 'ECONNREFUSED 10.0.0.7:5432 password=hunter2',
    },
  },
  {
    t: 'event',
    event: {
      kind: 'tool-input-available',
      id: 'call_1',
      name: 'send',
      input: {},
      toolKind: 'action',
    },
  },
  { t: 'event', event: { kind: 'tool-output-denied', id: 'call_1' } },
  { t: 'event', event: { kind: 'title', title: 'Weekly report' } },
  { t: 'event', event: { kind: 'queue', queue: ['secret plan'] } },
  { t: 'text', v: 'Done.' },
  { t: 'event', event: { kind: 'step-finish' } },
]

test.group('AG-UI translator (pure)', () => {
  test('text, steps, tool calls and results pass EventSchema and verifyEvents', async ({
    assert,
  }) => {
    const events = translate(stored(run))
    await assertConforms(assert, events)
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'RUN_STARTED',
        'STEP_STARTED',
        'TEXT_MESSAGE_START',
        'TEXT_MESSAGE_CONTENT',
        'TEXT_MESSAGE_END',
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'TOOL_CALL_RESULT',
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'TOOL_CALL_RESULT',
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'TOOL_CALL_RESULT',
        'CUSTOM',
        'TEXT_MESSAGE_START',
        'TEXT_MESSAGE_CONTENT',
        'TEXT_MESSAGE_END',
        'STEP_FINISHED',
        'CUSTOM',
        'RUN_FINISHED',
      ]
    )
  })

  test('a reused provider call id gets a distinct AG-UI id; results have their own message id', async ({
    assert,
  }) => {
    const events = translate(stored(run))
    const starts = events.filter((e) => e.type === 'TOOL_CALL_START')
    const ids = starts.map((e) => e.toolCallId as string)
    assert.lengthOf(new Set(ids), 3)
    assert.deepInclude(decodeAgUiId(ids[0])!, { kind: 'tool', n: 3, address: ['call_1'] })
    assert.deepInclude(decodeAgUiId(ids[2])!, { kind: 'tool', n: 10, address: ['call_1'] })
    const text = events.find((e) => e.type === 'TEXT_MESSAGE_START')!
    assert.equal(starts[0].parentMessageId, text.messageId)
    const results = events.filter((e) => e.type === 'TOOL_CALL_RESULT')
    assert.lengthOf(new Set(results.map((r) => r.messageId)), 3)
    for (const result of results) assert.notInclude(ids, result.messageId as string)
  })

  test('nothing secret: tool error text, unlisted events and thrown errors stay out', async ({
    assert,
  }) => {
    const events = translate(
      stored([
        ...run,
        { t: 'error', code: 'run_failed', message: 'TypeError at db.ts:12 token=abc' },
      ])
    )
    await assertConforms(assert, events)
    const wire = JSON.stringify(events)
    for (const secret of ['hunter2', 'ECONNREFUSED', 'secret plan', 'token=abc', 'db.ts'])
      assert.notInclude(wire, secret)
    const results = events.filter((e) => e.type === 'TOOL_CALL_RESULT').map((e) => e.content)
    assert.includeMembers(results, [TOOL_FAILED_SENTENCE, TOOL_DECLINED_SENTENCE])
    assert.deepInclude(events.at(-1)!, {
      type: 'RUN_ERROR',
      code: 'run_failed',
      message: 'The run stopped unexpectedly.',
    })
    // The app may opt in to tool error text.
    const optedIn = JSON.stringify(translate(stored(run), { toolErrorText: true }))
    assert.include(optedIn, 'ECONNREFUSED')
  })

  test('the same frames give the same events: live and replayed ids agree', ({ assert }) => {
    assert.deepEqual(translate(stored(run)), translate(stored(run)))
  })

  test('close() closes what is open: a stream cut mid-message and mid-call still verifies', async ({
    assert,
  }) => {
    const cut = stored(run).slice(0, 4) // step open, text closed, call started with partial args
    await assertConforms(assert, translate(cut))
  })
})

test.group('AG-UI translator | interrupts', () => {
  test('an approval and a question set end the run with interrupts the official checks accept', async ({
    assert,
  }) => {
    const frames = stored([
      { t: 'text', v: 'I will send it.' },
      {
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'call_9',
          name: 'send_email',
          input: { to: 'a@b.c' },
          toolKind: 'action',
        },
      },
      {
        t: 'approval',
        runId: 'run-1',
        id: 'call_9',
        toolName: 'send_email',
        input: { to: 'a@b.c' },
        confirmation: { title: 'Send it?' },
        expiresAt: '2030-01-01T00:00:00Z',
      },
      {
        t: 'elicitation',
        runId: 'run-1.sub1',
        id: 'ask_1',
        request: {
          id: 'ask_1',
          source: 'ask',
          preamble: 'One question.',
          questions: [
            {
              id: 'fmt',
              prompt: 'Format?',
              options: [{ value: 'pdf', label: 'PDF' }],
              defaults: ['pdf'],
            },
          ],
        },
      },
    ])
    const events = translate(frames)
    await assertConforms(assert, events)
    const outcome = events.at(-1)!.outcome as any
    assert.equal(outcome.type, 'interrupt')
    const [approval, question] = outcome.interrupts
    const call = events.find((e) => e.type === 'TOOL_CALL_START')!
    assert.include(approval, {
      reason: 'tool_call',
      toolCallId: call.toolCallId,
      message: 'Send it?',
      expiresAt: '2030-01-01T00:00:00Z',
    })
    assert.deepInclude(decodeAgUiId(question.id)!, {
      kind: 'int',
      address: ['run-1.sub1', 'ask_1'],
    })
    assert.equal(question.reason, 'input_required')
    assert.deepEqual(question.responseSchema.properties.answers.properties.fmt, {
      type: 'array',
      title: 'Format?',
      items: { type: 'string', enum: ['pdf'] },
      maxItems: 1,
      default: ['pdf'],
    })
  })
})

test.group('AG-UI translator | the official checks do bite', () => {
  test('an unclosed message before RUN_FINISHED fails verifyEvents', async ({ assert }) => {
    const bad: AgUiEvent[] = [
      { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
      { type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' },
      { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
    ]
    await assert.rejects(() => lastValueFrom(from(bad as any[]).pipe(verifyEvents(), toArray())))
    assert.isFalse(
      EventSchema.safeParse({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: null }).success
    )
  })
})

test.group('AG-UI translator: reasoning, activity, sub-agents, state, segments', () => {
  const reasoning: StreamFrame[] = [
    { t: 'event', event: { kind: 'reasoning', text: 'Thinking about it.' } },
    { t: 'text', v: 'Hi.' },
  ]

  test('reasoning is sent only when configured', async ({ assert }) => {
    const quiet = translate(stored(reasoning))
    assert.notInclude(JSON.stringify(quiet), 'Thinking')
    const loud = translate(stored(reasoning), { reasoning: true })
    await assertConforms(assert, loud)
    assert.deepEqual(
      loud.filter((e) => e.type.startsWith('REASONING')).map((e) => e.type),
      [
        'REASONING_START',
        'REASONING_MESSAGE_START',
        'REASONING_MESSAGE_CONTENT',
        'REASONING_MESSAGE_END',
        'REASONING_END',
      ]
    )
  })

  test('components and ui events become activity snapshots; a repeated id replaces', async ({
    assert,
  }) => {
    const events = translate(
      stored([
        { t: 'component', name: 'chart', data: { n: 1 }, id: 'c:ui:1', partial: true },
        { t: 'component', name: 'chart', data: { n: 1 }, id: 'c:ui:1' },
        { t: 'component', name: 'chart', data: { n: 2 }, id: 'c:ui:1' },
        { t: 'event', event: { kind: 'ui', id: 'u1', component: 'card', props: { a: 1 } } },
      ])
    )
    await assertConforms(assert, events)
    const activity = events.filter((e) => e.type === 'ACTIVITY_SNAPSHOT')
    assert.lengthOf(activity, 3, 'the live-only partial is not sent')
    assert.equal(activity[0].messageId, activity[1].messageId)
    assert.notEqual(activity[1].messageId, activity[2].messageId)
    assert.deepEqual(activity[1].content, { props: { n: 2 } })
    assert.isTrue(activity.every((e) => e.replace === true))
  })

  const parked: StreamFrame[] = [
    { t: 'event', event: { kind: 'step-start' } },
    { t: 'text', v: 'Delegating. ' },
    { t: 'event', event: { kind: 'subagent-start', runId: 'run-1.sub1', name: 'helper' } },
    { t: 'event', event: { kind: 'step-start' } },
    { t: 'text', v: 'Sub-agent here. ' },
    {
      t: 'event',
      event: {
        kind: 'tool-input-available',
        id: 'call_9',
        name: 'send_email',
        input: { to: 'a' },
        toolKind: 'action',
      },
    },
    {
      t: 'approval',
      runId: 'run-1.sub1',
      id: 'call_9',
      toolName: 'send_email',
      input: { to: 'a' },
    },
  ]
  const resumed: StreamFrame[] = [
    { t: 'event', event: { kind: 'tool-output', id: 'call_9', output: { sent: true } } },
    { t: 'text', v: 'Sent. ' },
    { t: 'event', event: { kind: 'step-finish' } },
    { t: 'event', event: { kind: 'subagent-finish', runId: 'run-1.sub1' } },
    { t: 'text', v: 'Back. ' },
    { t: 'event', event: { kind: 'step-finish' } },
  ]

  test('a sub-agent that parks: suspended with interrupt ids, re-opened under the same ids', async ({
    assert,
  }) => {
    const frames = stored([...parked, ...resumed])
    const translator = new FrameTranslator({ streamRunId: 'run-1' })
    const first = { threadId: 't-1', runId: 'agui-1' }
    const second = { threadId: 't-1', runId: 'agui-2' }
    const events: AgUiEvent[] = translator.open(first)
    for (const frame of frames.slice(0, parked.length)) {
      const { cursor, ...body } = frame
      events.push(...translator.push(body as StreamFrame, parseCursor(cursor)))
    }
    events.push(...translator.close(first))
    translator.endSegment()
    const resumeAt = events.length
    events.push(...translator.open(second))
    for (const frame of frames.slice(parked.length)) {
      const { cursor, ...body } = frame
      events.push(...translator.push(body as StreamFrame, parseCursor(cursor)))
    }
    events.push(...translator.close(second))
    await assertConforms(assert, events)

    const interruptRun = events.find((e) => e.type === 'RUN_FINISHED')!
    const outcome = interruptRun.outcome as { type: string; interrupts: any[] }
    assert.equal(outcome.type, 'interrupt')
    const sub = events.find((e) => e.type === 'SUBAGENT_STARTED')!
    assert.equal(outcome.interrupts[0].subagentRunId, sub.subagentRunId)
    const suspended = events.find((e) => e.type === 'SUBAGENT_FINISHED')!
    assert.deepEqual(suspended.outcome, {
      type: 'suspended',
      interruptIds: [outcome.interrupts[0].id],
    })
    // The child's own events carry its id; the parent's do not.
    const childText = events.find(
      (e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.delta === 'Sub-agent here. '
    )!
    assert.equal(childText.subagentRunId, sub.subagentRunId)

    const after = events.slice(resumeAt)
    assert.deepEqual(
      after.slice(0, 4).map((e) => [e.type, e.stepName ?? e.subagentRunId]),
      [
        ['RUN_STARTED', undefined],
        ['STEP_STARTED', events[1].stepName],
        ['SUBAGENT_STARTED', sub.subagentRunId],
        [
          'STEP_STARTED',
          events.find((e) => e.type === 'STEP_STARTED' && e.subagentRunId)!.stepName,
        ],
      ]
    )
    // The approved call is answered with only its result, under its original id.
    const call = events.find((e) => e.type === 'TOOL_CALL_START')!
    assert.notInclude(
      after.map((e) => e.type),
      'TOOL_CALL_START'
    )
    const result = after.find((e) => e.type === 'TOOL_CALL_RESULT')!
    assert.equal(result.toolCallId, call.toolCallId)
    assert.deepEqual(after.at(-1)!.outcome, { type: 'success' })
  })

  test('a failed sub-agent ends with SUBAGENT_ERROR and a fixed sentence', async ({ assert }) => {
    const events = translate(
      stored([
        { t: 'event', event: { kind: 'subagent-start', runId: 'c', name: 'x' } },
        { t: 'event', event: { kind: 'step-start' } },
        { t: 'text', v: 'oops' },
        { t: 'event', event: { kind: 'subagent-finish', runId: 'c', status: 'failed' } },
      ])
    )
    await assertConforms(assert, events)
    const error = events.find((e) => e.type === 'SUBAGENT_ERROR')!
    assert.equal(error.code, 'subagent_failed')
    assert.deepEqual(events.at(-1)!.outcome, { type: 'success' })
  })

  test('the projection: agent_stream.run_state at the end by default, after each step when configured, never STATE_*', async ({
    assert,
  }) => {
    const frames = stored([
      { t: 'event', event: { kind: 'title', title: 'Weekly' } },
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'event', event: { kind: 'step-finish', usage: { inputTokens: 3, note: 'x' } } },
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'event', event: { kind: 'step-finish', usage: { inputTokens: 4 } } },
    ])
    const runState = (events: AgUiEvent[]) =>
      events.filter((e) => e.type === 'CUSTOM' && e.name === 'agent_stream.run_state')
    const plain = translate(frames)
    // The agent wrote no state: its state is the page's own, never overwritten.
    assert.notInclude(
      plain.map((e) => e.type),
      'STATE_SNAPSHOT'
    )
    assert.notInclude(
      plain.map((e) => e.type),
      'STATE_DELTA'
    )
    const expected = { title: 'Weekly', steps: 2, usage: { inputTokens: 7 } }
    assert.deepEqual(runState(plain).at(-1)!.value, expected)
    assert.equal(plain.at(-2)!.name, 'agent_stream.run_state')
    const deltas = translate(frames, { stateDeltas: true, stateSnapshot: false })
    await assertConforms(assert, deltas)
    assert.notInclude(
      deltas.map((e) => e.type),
      'STATE_SNAPSHOT'
    )
    // The whole projection after each step that changed it.
    assert.deepEqual(
      runState(deltas).map((e) => e.value),
      [{ title: 'Weekly', steps: 1, usage: { inputTokens: 3 } }, expected]
    )
  })
})

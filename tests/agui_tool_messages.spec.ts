import { test } from '@japa/runner'
import { defaultApplyEvents } from '@ag-ui/client'
import { from, lastValueFrom, toArray } from 'rxjs'
import { decodeAgUiId } from '../src/agui/ids.js'
import {
  FrameTranslator,
  RUN_STATE_EVENT,
  type AgUiEventRecord as AgUiEvent,
} from '../src/agui/translate/index.js'
import { parseCursor } from '../src/core/cursor.js'
import type { StreamFrame } from '../src/core/frames.js'
import { assertConforms } from './helpers/agui.js'

type Options = Partial<ConstructorParameters<typeof FrameTranslator>[0]>
const RUN = { threadId: 't-1', runId: 'run-1' }

/** A translator fed `frames` (seq 1, 2, ...; text rows end at their length). */
function feed(frames: StreamFrame[], options: Options = {}) {
  const translator = new FrameTranslator({ streamRunId: 'run-1', ...options })
  const events: AgUiEvent[] = translator.open(RUN)
  frames.forEach((frame, i) => {
    const at = parseCursor(frame.t === 'text' ? `${i + 1}.${frame.v.length}` : `${i + 1}`)
    events.push(...translator.push(frame, at))
  })
  return { translator, events }
}

function translate(frames: StreamFrame[], options: Options = {}) {
  const { translator, events } = feed(frames, options)
  return { translator, events: [...events, ...translator.close(RUN)] as AgUiEvent[] }
}

const event = (e: Record<string, unknown>): StreamFrame => ({ t: 'event', event: e as any })
const HAIKU = { japanese: ['a', 'b', 'c'], english: ['x', 'y', 'z'] }

/**
 * What the AG-UI repository's `server-starter-all-features` tool-based generative UI agent says
 * (in a `MESSAGES_SNAPSHOT` of its own): an assistant message with one `generate_haiku` call, and
 * that call's tool message `"Haiku created"`. Here: the frames an agent writes for it.
 */
const haikuRun: StreamFrame[] = [
  event({ kind: 'step-start' }),
  event({
    kind: 'tool-input-available',
    id: 'call_1',
    name: 'generate_haiku',
    input: HAIKU,
    toolKind: 'action',
  }),
  event({ kind: 'tool-output', id: 'call_1', output: 'Haiku created' }),
  event({ kind: 'step-finish' }),
]

/** The messages `@ag-ui/client`'s own applier builds from `events`. */
async function applied(events: AgUiEvent[]) {
  const input = { threadId: 't-1', runId: 'run-1', messages: [], state: {}, tools: [], context: [] }
  const updates = await lastValueFrom(
    defaultApplyEvents(input as any, from(events as any[]), { messages: [] } as any, []).pipe(
      toArray()
    )
  )
  return updates.filter((u) => u.messages).at(-1)?.messages ?? []
}

test.group('AG-UI tool messages: results, parents, the transcript', () => {
  test('a plain-string tool result is sent as that string; other values as JSON', async ({
    assert,
  }) => {
    const { events } = translate([
      ...haikuRun,
      event({ kind: 'tool-input-available', id: 'c2', name: 'f', input: {}, toolKind: 'read' }),
      event({ kind: 'tool-output', id: 'c2', output: { ok: true } }),
      event({ kind: 'tool-input-available', id: 'c3', name: 'f', input: {}, toolKind: 'read' }),
      event({ kind: 'tool-output', id: 'c3', output: ['a', 1] }),
    ])
    await assertConforms(assert, events)
    const contents = events.filter((e) => e.type === 'TOOL_CALL_RESULT').map((e) => e.content)
    assert.deepEqual(contents, ['Haiku created', '{"ok":true}', '["a",1]'])
  })

  test('an opted-in tool error that is a string is sent as that string', async ({ assert }) => {
    const { events } = translate(
      [
        event({ kind: 'tool-input-available', id: 'c1', name: 'f', input: {}, toolKind: 'read' }),
        event({ kind: 'tool-output-error', id: 'c1', error: 'Timed out' }),
      ],
      { toolErrorText: true }
    )
    assert.equal(events.find((e) => e.type === 'TOOL_CALL_RESULT')!.content, 'Timed out')
  })

  test('TOOL_CALL_START always has a parentMessageId: minted when no text came before; one per step', async ({
    assert,
  }) => {
    const frames: StreamFrame[] = [
      event({ kind: 'step-start' }),
      event({ kind: 'tool-input-start', id: 'a', name: 'search', toolKind: 'read' }),
      event({ kind: 'tool-input-available', id: 'a', name: 'search', input: {}, toolKind: 'read' }),
      event({ kind: 'tool-input-available', id: 'b', name: 'search', input: {}, toolKind: 'read' }),
      event({ kind: 'tool-output', id: 'a', output: 1 }),
      event({ kind: 'tool-output', id: 'b', output: 2 }),
      event({ kind: 'step-finish' }),
      event({ kind: 'step-start' }),
      event({ kind: 'tool-input-available', id: 'c', name: 'search', input: {}, toolKind: 'read' }),
      event({ kind: 'tool-output', id: 'c', output: 3 }),
      event({ kind: 'step-finish' }),
      event({ kind: 'step-start' }),
      { t: 'text', v: 'Found it.' },
      event({ kind: 'tool-input-available', id: 'd', name: 'save', input: {}, toolKind: 'action' }),
      event({ kind: 'tool-output', id: 'd', output: 'Saved' }),
      event({ kind: 'step-finish' }),
    ]
    const { events, translator } = translate(frames, { messagesSnapshot: true })
    await assertConforms(assert, events)
    const starts = events.filter((e) => e.type === 'TOOL_CALL_START')
    const parents = starts.map((e) => e.parentMessageId as string)
    assert.lengthOf(parents, 4)
    for (const parent of parents) assert.isString(parent)
    // One step's calls share the message minted from its first call's position (seq 2).
    assert.equal(parents[0], parents[1])
    assert.deepInclude(decodeAgUiId(parents[0])!, { runId: 'run-1', kind: 'msg', n: 2 })
    // The next step's calls have their own; a call after text belongs to that text.
    assert.deepInclude(decodeAgUiId(parents[2])!, { kind: 'msg', n: 9 })
    const text = events.find((e) => e.type === 'TEXT_MESSAGE_START')!
    assert.equal(parents[3], text.messageId)
    // No id is minted twice.
    const ids = events.flatMap((e) => [e.messageId, e.toolCallId]).filter(Boolean)
    for (const parent of new Set(parents.slice(0, 3))) {
      assert.notInclude(ids, parent)
    }

    // The transcript puts each call on its parent, as the client's own applier does.
    const messages = translator.messages()
    const assistant = messages.filter((m) => m.role === 'assistant')
    assert.deepEqual(
      assistant.map((m) => [m.id, (m.toolCalls as any[]).map((c) => c.id)]),
      [
        [parents[0], [starts[0].toolCallId, starts[1].toolCallId]],
        [parents[2], [starts[2].toolCallId]],
        [parents[3], [starts[3].toolCallId]],
      ]
    )
    assert.deepEqual(
      await applied(events),
      messages.map(({ content, ...m }) =>
        m.role === 'assistant' && !content ? m : { ...m, content }
      )
    )
  })

  test('the minted parent is the same live, replayed and after a re-attach mid-call', async ({
    assert,
  }) => {
    const frames: StreamFrame[] = [
      event({ kind: 'step-start' }),
      event({ kind: 'tool-input-start', id: 'a', name: 'search', toolKind: 'read' }),
      event({ kind: 'tool-input-delta', id: 'a', delta: '{"q":1}' }),
    ]
    const live = translate(frames).events
    assert.deepEqual(translate(frames).events, live)
    const parent = live.find((e) => e.type === 'TOOL_CALL_START')!.parentMessageId
    assert.isString(parent)
    // A re-attach at the cursor: a translator restored from the checkpoint re-opens the call.
    const { translator } = feed(frames)
    const joined = new FrameTranslator({ streamRunId: 'run-1' })
    joined.restore(translator.checkpoint())
    const prelude = joined.open({ threadId: 't-1', runId: 'run-2' })
    const reopened = prelude.find((e) => e.type === 'TOOL_CALL_START')!
    assert.equal(reopened.parentMessageId, parent)
    await assertConforms(assert, [...prelude, ...joined.close({ threadId: 't-1', runId: 'run-2' })])
  })

  test('a sub-agent call with no text before gets a parent of its own owner', async ({
    assert,
  }) => {
    const { events } = translate([
      { t: 'text', v: 'Delegating.' },
      event({ kind: 'subagent-start', runId: 'child', name: 'helper' }),
      event({ kind: 'tool-input-available', id: 'a', name: 'f', input: {}, toolKind: 'read' }),
      event({ kind: 'tool-output', id: 'a', output: 'ok' }),
      event({ kind: 'subagent-finish', runId: 'child' }),
      event({ kind: 'tool-input-available', id: 'b', name: 'f', input: {}, toolKind: 'read' }),
      event({ kind: 'tool-output', id: 'b', output: 'ok' }),
    ])
    await assertConforms(assert, events)
    const [inner, outer] = events.filter((e) => e.type === 'TOOL_CALL_START')
    const text = events.find((e) => e.type === 'TEXT_MESSAGE_START')!
    assert.isString(inner.parentMessageId)
    assert.notEqual(inner.parentMessageId, text.messageId)
    assert.isString(inner.subagentRunId)
    // Back in the parent: its own message again, never the sub-agent's.
    assert.isString(outer.parentMessageId)
    assert.notEqual(outer.parentMessageId, inner.parentMessageId)
  })

  test("the agent's frames are its messages: MESSAGES_SNAPSHOT holds the reference agent's", async ({
    assert,
  }) => {
    const { events, translator } = translate(haikuRun, { messagesSnapshot: true })
    await assertConforms(assert, events)
    const messages = translator.messages()
    const start = events.find((e) => e.type === 'TOOL_CALL_START')!
    assert.deepEqual(messages, [
      {
        id: start.parentMessageId,
        role: 'assistant',
        toolCalls: [
          {
            id: start.toolCallId,
            type: 'function',
            function: { name: 'generate_haiku', arguments: JSON.stringify(HAIKU) },
          },
        ],
      },
      {
        id: events.find((e) => e.type === 'TOOL_CALL_RESULT')!.messageId,
        role: 'tool',
        toolCallId: start.toolCallId,
        content: 'Haiku created',
      },
    ])
    // The client's own applier builds the same messages from the events.
    assert.deepEqual(await applied(events), messages)
  })

  test('the clients in use (0.0.57 to 0.0.59) verify these events and build the same messages', async ({
    assert,
  }) => {
    const { events, translator } = translate(
      [event({ kind: 'custom', name: 'PredictState', value: [] }), ...haikuRun],
      { messagesSnapshot: true, customEvents: ['PredictState'] }
    )
    const clients = [
      await import('ag-ui-client-0.0.57'),
      await import('ag-ui-client-0.0.58'),
      await import('ag-ui-client-0.0.59'),
    ]
    for (const client of clients) {
      const verified = await lastValueFrom(
        from(events as any[]).pipe((client.verifyEvents as any)(false), toArray())
      )
      assert.lengthOf(verified, events.length)
      const updates: any[] = await lastValueFrom(
        (client.defaultApplyEvents as any)(
          { messages: [], state: {} },
          from(events as any[]),
          { messages: [] },
          []
        ).pipe(toArray())
      )
      assert.deepEqual(updates.filter((u) => u.messages).at(-1).messages, translator.messages())
    }
  })

  test('custom events: CUSTOM { name, value } with any JSON value, only when allow-listed', async ({
    assert,
  }) => {
    const value = [{ state_key: 'document', tool: 'write_document', tool_argument: 'document' }]
    const frames = [
      event({ kind: 'custom', name: 'PredictState', value }),
      event({ kind: 'custom', name: 'other', value: 'x' }),
      event({ kind: 'custom', name: 'n', value: null }),
      event({ kind: 'progress', percent: 5, secret: 's' }),
    ]
    const off = translate(frames).events
    assert.deepEqual(
      off.filter((e) => e.type === 'CUSTOM' && e.name !== RUN_STATE_EVENT),
      []
    )
    const on = translate(frames, {
      customEvents: ['PredictState', 'n'],
      custom: { progress: ['percent'] },
    }).events
    await assertConforms(assert, on)
    assert.deepEqual(
      on.filter((e) => e.type === 'CUSTOM' && e.name !== RUN_STATE_EVENT),
      [
        { type: 'CUSTOM', name: 'PredictState', value },
        { type: 'CUSTOM', name: 'n', value: null },
        { type: 'CUSTOM', name: 'progress', value: { percent: 5 } },
      ]
    )
  })
})

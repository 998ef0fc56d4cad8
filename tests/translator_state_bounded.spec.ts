import { test } from '@japa/runner'
import fc from 'fast-check'
import { AGUI_STATE_CODEC } from '../src/agui/door/state_codec.js'
import { FrameTranslator, type AgUiEvent } from '../src/agui/translate/index.js'
import { REMEMBERED_COMPONENTS } from '../src/agui/translate/model.js'
import type { StreamFrame } from '../src/core/frames.js'
import { UiMessageTranslator } from '../src/ui_message/translate/index.js'

/**
 * Each door's translator keeps what is open in a run (text, tool calls without a result, steps,
 * sub-agents, the components it may see replaced), never the run's history: its state, as its
 * checkpoints store it, stays under one bound after 200 frames and after 5,000 (pure, no
 * database). And the AG-UI translator's bounded memory of component ids keeps replay, live and
 * a restore from a checkpoint at every position the same, past that memory too.
 */

/** One written frame, or a segment end. */
type Item = StreamFrame | 'end'

/**
 * A random frame of a long run: text, tool calls (a few provider ids, reused; most get their
 * result), components (a few ids replaced again and again, ids met once, no id), steps,
 * sub-agents, titles, reasoning, custom events, segment ends. `n` makes fresh ids unique.
 */
const item: fc.Arbitrary<(n: number) => Item> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom('Hi ', 'déjà 🙂 ').map((v) => (): Item => ({ t: 'text', v })),
  },
  {
    weight: 6,
    arbitrary: fc
      .record({ c: fc.nat(7), kind: fc.constantFrom(0, 1, 2, 3, 3, 4) })
      .map(({ c, kind }) => (): Item => {
        const id = `call_${c}`
        const call = { id, name: 'f', toolKind: 'read' as const }
        if (kind === 0) return { t: 'event', event: { kind: 'tool-input-start', ...call } }
        if (kind === 1) return { t: 'event', event: { kind: 'tool-input-delta', id, delta: '{' } }
        if (kind === 2)
          return { t: 'event', event: { kind: 'tool-input-available', ...call, input: { c } } }
        if (kind === 3) return { t: 'event', event: { kind: 'tool-output', id, output: { c } } }
        return { t: 'event', event: { kind: 'tool-output-error', id, error: 'no' } }
      }),
  },
  {
    weight: 5,
    arbitrary: fc
      .record({ pick: fc.constantFrom('few', 'fresh', 'none', 'ui'), c: fc.nat(4) })
      .map(({ pick, c }) => (n: number): Item => {
        if (pick === 'ui')
          return { t: 'event', event: { kind: 'ui', id: `k${c}`, component: 'card', props: {} } }
        const id = pick === 'few' ? `k${c}` : pick === 'fresh' ? `u${n}` : undefined
        return { t: 'component', name: 'card', ...(id ? { id } : {}), data: { n } }
      }),
  },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom<StreamFrame>(
        { t: 'event', event: { kind: 'step-start' } },
        { t: 'event', event: { kind: 'step-finish', usage: { inputTokens: 3 } } },
        { t: 'event', event: { kind: 'subagent-start', runId: 'child_1', name: 'helper' } },
        { t: 'event', event: { kind: 'subagent-finish', runId: 'child_1' } },
        { t: 'event', event: { kind: 'subagent-start', runId: 'child_2' } },
        { t: 'event', event: { kind: 'subagent-finish', runId: 'child_2', status: 'failed' } },
        { t: 'event', event: { kind: 'title', title: 'T' } },
        { t: 'event', event: { kind: 'reasoning', text: 'hmm' } },
        { t: 'event', event: { kind: 'queue', depth: 1 } as never }
      )
      .map((frame) => (): Item => frame),
  },
  { weight: 1, arbitrary: fc.constant((): Item => 'end') }
)

/** A tool call of its own (an id met once), with its result. */
const freshCall = (n: number): Item[] => {
  const call = { id: `fresh_${n}`, name: 'f', toolKind: 'read' as const }
  return [
    { t: 'event', event: { kind: 'tool-input-available', ...call, input: {} } },
    { t: 'event', event: { kind: 'tool-output', id: call.id, output: n } },
  ]
}

/** `length` items (a fresh call is two), as written. */
const run = (length: number) =>
  fc
    .array(
      fc.oneof({ weight: 12, arbitrary: item }, { weight: 1, arbitrary: fc.constant(freshCall) }),
      {
        minLength: length,
        maxLength: length,
      }
    )
    .map((makers) => makers.flatMap((make, i) => make(i + 1)))

/** Whether row `i` is a component a later row with the same id replaced (as stored). */
function supersededFlags(items: Item[]) {
  const last = new Map<string, number>()
  items.forEach((it, i) => {
    if (it !== 'end' && it.t === 'component' && it.id) last.set(it.id, i)
  })
  return items.map(
    (it, i) => it !== 'end' && it.t === 'component' && !!it.id && last.get(it.id) !== i
  )
}

const AGUI = { streamRunId: 'run_bound', reasoning: true, stateDeltas: true, clientTools: ['f'] }

/** Feed items `from` on into `translator`; the events of each. */
function feedAgUi(translator: FrameTranslator, items: Item[], flags: boolean[] | null, from = 0) {
  const out: AgUiEvent[][] = []
  for (let i = from; i < items.length; i++) {
    const it = items[i]
    out.push(
      it === 'end'
        ? translator.endSegment()
        : translator.push(it, { seq: i + 1 }, flags?.[i] ?? false)
    )
  }
  return out
}

/** What a client keeps of a run's events: each activity's place and its last content. */
function view(events: AgUiEvent[]) {
  const out: unknown[] = []
  const content = new Map<string, unknown>()
  for (const event of events) {
    if (event.type === 'ACTIVITY_SNAPSHOT') {
      if (!content.has(event.messageId)) out.push(event.messageId)
      content.set(event.messageId, event.content)
    } else out.push(event)
  }
  return { out, content: [...content] }
}

/** The largest state (as its checkpoint is stored) after any frame of `items`. */
function largestAgUi(items: Item[]) {
  const translator = new FrameTranslator(AGUI)
  let largest = 0
  items.forEach((it, i) => {
    if (it === 'end') translator.endSegment()
    else translator.push(it, { seq: i + 1 })
    largest = Math.max(largest, AGUI_STATE_CODEC.encode(translator.checkpoint()).length)
  })
  return largest
}

function largestUiMessage(items: Item[]) {
  const translator = new UiMessageTranslator({ reasoning: true })
  let largest = 0
  items.forEach((it, i) => {
    if (it === 'end') translator.end(i % 2 === 0)
    else translator.push(it, { seq: i + 1 })
    largest = Math.max(largest, translator.checkpoint().length)
  })
  return largest
}

/**
 * The bounds: what is open at most in these runs (8 calls, 2 sub-agents, a step each, one text)
 * plus, for AG-UI, the component ids it remembers. The same for 200 frames and 5,000.
 */
const AGUI_BOUND = 8_192
const UI_MESSAGE_BOUND = 1_024

test.group('Translator state: bounded by what is open, not by the run', () => {
  for (const length of [200, 5000]) {
    test(`AG-UI: ${length} random frames, the state stays under ${AGUI_BOUND} bytes`, ({
      assert,
    }) => {
      fc.assert(
        fc.property(run(length), (items) => {
          assert.isAtMost(largestAgUi(items), AGUI_BOUND)
        }),
        { numRuns: length > 1000 ? 6 : 40, endOnFailure: true }
      )
    }).timeout(120_000)

    test(`useChat: ${length} random frames, the state stays under ${UI_MESSAGE_BOUND} bytes`, ({
      assert,
    }) => {
      fc.assert(
        fc.property(run(length), (items) => {
          assert.isAtMost(largestUiMessage(items), UI_MESSAGE_BOUND)
        }),
        { numRuns: length > 1000 ? 6 : 40, endOnFailure: true }
      )
    }).timeout(120_000)
  }

  test('AG-UI: the state does not hold the MESSAGES_SNAPSHOT transcript unless it is on', ({
    assert,
  }) => {
    const items = fc.sample(run(500), 1)[0]
    const translator = new FrameTranslator(AGUI)
    feedAgUi(translator, items, null)
    assert.isNull(translator.checkpoint().transcript)
    const keeping = new FrameTranslator({ ...AGUI, messagesSnapshot: true })
    feedAgUi(keeping, items, null)
    assert.isNotNull(keeping.checkpoint().transcript)
  })
})

test.group('Translator state: replaced components, live == replay == restored', () => {
  // Past the ids the model remembers too: many fresh ids between two versions of one.
  const longRun = fc.integer({ min: 50, max: REMEMBERED_COMPONENTS * 3 }).chain((n) => run(n))

  test('replay (superseded flagged) gives the view live gave; a restore at every position continues as the replay', ({
    assert,
  }) => {
    fc.assert(
      fc.property(longRun, fc.infiniteStream(fc.nat()), (items, picks) => {
        const flags = supersededFlags(items)
        const live = feedAgUi(new FrameTranslator(AGUI), items, null).flat()
        const replay = feedAgUi(new FrameTranslator(AGUI), items, flags)
        assert.deepEqual(view(replay.flat()), view(live))
        // A checkpoint at a position (taken by a live reader, or by a replay) continues exactly
        // as the replay from the start does.
        for (let k = 0; k < 12; k++) {
          const at = picks.next().value % (items.length + 1)
          for (const source of [null, flags]) {
            const before = new FrameTranslator(AGUI)
            feedAgUi(before, items.slice(0, at), source)
            const restored = new FrameTranslator(AGUI)
            restored.restore(AGUI_STATE_CODEC.decode(AGUI_STATE_CODEC.encode(before.checkpoint())))
            assert.deepEqual(feedAgUi(restored, items, flags, at), replay.slice(at))
          }
        }
      }),
      { numRuns: 60 }
    )
  })
})

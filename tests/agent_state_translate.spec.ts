import { test } from '@japa/runner'
import fc from 'fast-check'
import fastJsonPatch from 'fast-json-patch'
import { AGUI_STATE_CODEC } from '../src/agui/door/state_codec.js'
import { FrameTranslator, type AgUiEventRecord } from '../src/agui/translate/index.js'
import { parseCursor } from '../src/core/cursor.js'
import type { StreamFrame } from '../src/core/frames.js'
import { UI_MESSAGE_STATE_CODEC } from '../src/ui_message/door/state_codec.js'
import { UiMessageTranslator } from '../src/ui_message/translate/index.js'

/**
 * The agent's state in both translators (pure): at every position, a translator restored from
 * a checkpoint (through the door's codec) translates the rest as one that never stopped, and
 * an AG-UI client that joins there (the prelude's STATE_SNAPSHOT, then the deltas) ends with the
 * state a client that never left holds.
 */

const frame: fc.Arbitrary<StreamFrame> = fc.oneof(
  fc.constantFrom<StreamFrame>(
    { t: 'text', v: 'Hi ' },
    { t: 'event', event: { kind: 'step-start' } },
    { t: 'event', event: { kind: 'step-finish', usage: { inputTokens: 1 } } }
  ),
  fc
    .record({ n: fc.nat(3), list: fc.array(fc.nat(9), { maxLength: 3 }) })
    .map(({ n, list }): StreamFrame => ({
      t: 'event',
      event: { kind: 'state', snapshot: { n, list } },
    })),
  fc.nat(9).map((value): StreamFrame => ({
    t: 'event',
    event: { kind: 'state', delta: [{ op: 'add', path: '/list/-', value }] },
  })),
  fc.nat(3).map((value): StreamFrame => ({
    t: 'event',
    event: { kind: 'state', delta: [{ op: 'replace', path: '/n', value }] },
  }))
)

const at = (i: number) => parseCursor(String(i + 1))

/** What the frames set the agent's state to (none before a snapshot: deltas then do nothing). */
function reference(frames: StreamFrame[]) {
  let state: unknown = null
  for (const f of frames) {
    const event = f.t === 'event' ? (f.event as any) : null
    if (event?.kind !== 'state') continue
    if (event.snapshot) state = structuredClone(event.snapshot)
    else if (state !== null)
      state = fastJsonPatch.applyPatch(state, event.delta, true, false).newDocument
  }
  return state
}

/** The state a client holds after `events`, from `held`. */
function applied(held: unknown, events: AgUiEventRecord[]) {
  for (const event of events) {
    if (event.type === 'STATE_SNAPSHOT') held = structuredClone(event.snapshot)
    if (event.type === 'STATE_DELTA')
      held = fastJsonPatch.applyPatch(held, event.delta as any, true, false).newDocument
  }
  return held
}

test.group('Agent state in the translators', () => {
  test('AG-UI: restored at any position, the same events; a join prelude carries the state there', ({
    assert,
  }) => {
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 25 }), (frames) => {
        const options = { streamRunId: 'run_state' }
        const run = { threadId: 't', runId: 'r' }
        const whole = new FrameTranslator(options)
        const per: AgUiEventRecord[][] = frames.map(
          (f, i) => whole.push(f, at(i)) as AgUiEventRecord[]
        )
        const all = per.flat()
        assert.isFalse(all.some((e) => e.type === 'CUSTOM'))
        assert.deepEqual(applied(null, all), reference(frames))
        for (let k = 0; k <= frames.length; k++) {
          const first = new FrameTranslator(options)
          frames.slice(0, k).forEach((f, i) => first.push(f, at(i)))
          const back = new FrameTranslator(options)
          back.restore(AGUI_STATE_CODEC.decode(AGUI_STATE_CODEC.encode(first.checkpoint())))
          const rest = frames.slice(k).flatMap((f, i) => back.push(f, at(k + i)))
          assert.deepEqual(rest, per.slice(k).flat())
          // A client that joins here: the prelude's snapshot, then the rest.
          const joined = new FrameTranslator(options)
          joined.restore(first.checkpoint())
          const prelude = joined.open(run) as AgUiEventRecord[]
          const before = applied({ page: true }, per.slice(0, k).flat())
          const snapshot = prelude.find((e) => e.type === 'STATE_SNAPSHOT')
          if (
            per
              .slice(0, k)
              .flat()
              .some((e) => e.type === 'STATE_SNAPSHOT')
          ) {
            assert.deepEqual(snapshot?.snapshot, before)
          } else assert.isUndefined(snapshot)
          assert.deepEqual(
            applied(applied({ page: true }, prelude), rest as AgUiEventRecord[]),
            applied({ page: true }, all)
          )
        }
      }),
      { numRuns: 60 }
    )
  })

  test('useChat: one data-state part with the whole state; restored at any position, the same chunks', ({
    assert,
  }) => {
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 25 }), (frames) => {
        const whole = new UiMessageTranslator({})
        const per = frames.map((f, i) => whole.push(f, at(i)))
        const parts = per.flat().filter((c) => c.type === 'data-state')
        assert.deepEqual(parts.at(-1) ? (parts.at(-1) as any).data : null, reference(frames))
        for (const chunk of per.flat()) {
          if (chunk.type.startsWith('data-')) {
            assert.equal(chunk.type, 'data-state')
            assert.equal((chunk as any).id, 'state')
          }
        }
        for (let k = 0; k <= frames.length; k++) {
          const first = new UiMessageTranslator({})
          frames.slice(0, k).forEach((f, i) => first.push(f, at(i)))
          const back = new UiMessageTranslator({})
          back.restore(
            UI_MESSAGE_STATE_CODEC.decode(UI_MESSAGE_STATE_CODEC.encode(first.checkpoint()))
          )
          const rest = frames.slice(k).flatMap((f, i) => back.push(f, at(k + i)))
          assert.deepEqual(rest, per.slice(k).flat())
        }
      }),
      { numRuns: 60 }
    )
  })
})

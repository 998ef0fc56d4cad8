import { test } from '@japa/runner'
import fc from 'fast-check'
import { AGUI_STATE, AGUI_STATE_CODEC } from '../src/agui/door/state_codec.js'
import { FrameTranslator, type AgUiEvent } from '../src/agui/translate/index.js'
import type { StreamFrame } from '../src/core/frames.js'
import { UI_MESSAGE_STATE, UI_MESSAGE_STATE_CODEC } from '../src/ui_message/door/state_codec.js'
import { UiMessageTranslator, type UiChunk } from '../src/ui_message/translate/index.js'

/**
 * Each door's state codec (pure, no database): a translator state stored as text and read back
 * translates every following frame exactly as the state kept in memory does, and each door
 * stores under its own name.
 */

test.group('Door state codecs: AG-UI', () => {
  const frame: fc.Arbitrary<StreamFrame | 'end'> = fc.oneof(
    fc.constantFrom('Hi ', 'déjà 🙂 ').map((v): StreamFrame => ({ t: 'text', v })),
    fc
      .record({ n: fc.integer({ min: 0, max: 2 }), kind: fc.constantFrom(0, 1, 2, 3) })
      .map(({ n, kind }): StreamFrame => {
        const id = `call_${n}`
        if (kind === 0)
          return {
            t: 'event',
            event: { kind: 'tool-input-start', id, name: 'f', toolKind: 'read' },
          }
        if (kind === 1)
          return { t: 'event', event: { kind: 'tool-input-delta', id, delta: '{"a":' } }
        if (kind === 2)
          return {
            t: 'event',
            event: { kind: 'tool-input-available', id, name: 'f', input: { n }, toolKind: 'read' },
          }
        return { t: 'event', event: { kind: 'tool-output', id, output: { n } } }
      }),
    fc
      .record({ c: fc.integer({ min: 0, max: 1 }), n: fc.nat(5) })
      .map(({ c, n }): StreamFrame => ({ t: 'component', name: 'card', id: `k${c}`, data: { n } })),
    fc.constantFrom<StreamFrame>(
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'event', event: { kind: 'step-finish' } },
      { t: 'event', event: { kind: 'title', title: 'T' } },
      { t: 'event', event: { kind: 'subagent-start', runId: 'child_1', name: 'helper' } },
      { t: 'event', event: { kind: 'subagent-finish', runId: 'child_1' } },
      { t: 'event', event: { kind: 'reasoning', text: 'hmm' } }
    ),
    fc.constant('end' as const)
  )

  test('state -> JSON -> state translates every following frame the same', async ({ assert }) => {
    fc.assert(
      fc.property(
        fc.array(frame, { maxLength: 30 }),
        fc.array(frame, { maxLength: 30 }),
        (before, after) => {
          const options = { streamRunId: 'run_codec', messagesSnapshot: true, reasoning: true }
          const feed = (
            translator: FrameTranslator,
            frames: (StreamFrame | 'end')[],
            from: number
          ) => {
            const events: AgUiEvent[] = []
            frames.forEach((f, i) => {
              if (f === 'end') events.push(...translator.endSegment())
              else events.push(...translator.push(f, { seq: from + i }))
            })
            return events
          }
          const first = new FrameTranslator(options)
          feed(first, before, 1)
          const state = first.checkpoint()
          const json = AGUI_STATE_CODEC.encode(state)
          const back = new FrameTranslator(options)
          back.restore(AGUI_STATE_CODEC.decode(json))
          const kept = new FrameTranslator(options)
          kept.restore(state)
          assert.equal(AGUI_STATE_CODEC.encode(AGUI_STATE_CODEC.decode(json)), json)
          assert.deepEqual(
            feed(back, after, before.length + 1),
            feed(kept, after, before.length + 1)
          )
          // The same state (as JSON: a key holding `undefined` is no key).
          assert.equal(
            AGUI_STATE_CODEC.encode(back.checkpoint()),
            AGUI_STATE_CODEC.encode(kept.checkpoint())
          )
          assert.deepEqual(back.messages(), kept.messages())
        }
      ),
      { numRuns: 300 }
    )
  })
})

test.group('Door state codecs: useChat', () => {
  const frame: fc.Arbitrary<StreamFrame | 'end'> = fc.oneof(
    fc.constantFrom('Hi ', 'déjà 🙂 ').map((v): StreamFrame => ({ t: 'text', v })),
    fc
      .record({ n: fc.integer({ min: 0, max: 2 }), kind: fc.constantFrom(0, 1, 2) })
      .map(({ n, kind }): StreamFrame => {
        const id = `call_${n}`
        if (kind === 0)
          return {
            t: 'event',
            event: { kind: 'tool-input-available', id, name: 'f', input: { n }, toolKind: 'read' },
          }
        if (kind === 1) return { t: 'event', event: { kind: 'tool-output', id, output: { n } } }
        return { t: 'event', event: { kind: 'tool-input-start', id, name: 'f', toolKind: 'read' } }
      }),
    fc.constantFrom<StreamFrame>(
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'event', event: { kind: 'step-finish' } },
      { t: 'event', event: { kind: 'reasoning', text: 'hmm' } }
    ),
    fc.constant('end' as const)
  )

  test('state -> text -> state translates every following frame the same', ({ assert }) => {
    fc.assert(
      fc.property(
        fc.array(frame, { maxLength: 30 }),
        fc.array(frame, { maxLength: 30 }),
        (before, after) => {
          const rules = { reasoning: true }
          const feed = (
            translator: UiMessageTranslator,
            frames: (StreamFrame | 'end')[],
            from: number
          ) => {
            const chunks: UiChunk[] = []
            frames.forEach((f, i) => {
              if (f === 'end') chunks.push(...translator.end(false))
              else chunks.push(...translator.push(f, { seq: from + i }))
            })
            return chunks
          }
          const first = new UiMessageTranslator(rules)
          feed(first, before, 1)
          const state = first.checkpoint()
          const text = UI_MESSAGE_STATE_CODEC.encode(state)
          const back = new UiMessageTranslator(rules)
          back.restore(UI_MESSAGE_STATE_CODEC.decode(text))
          const kept = new UiMessageTranslator(rules)
          kept.restore(state)
          assert.equal(UI_MESSAGE_STATE_CODEC.decode(text), state)
          assert.deepEqual(
            feed(back, after, before.length + 1),
            feed(kept, after, before.length + 1)
          )
          assert.equal(back.checkpoint(), kept.checkpoint())
        }
      ),
      { numRuns: 300 }
    )
  })

  test('each door stores its state under its own name', ({ assert }) => {
    assert.equal(AGUI_STATE.door, 'agui')
    assert.equal(UI_MESSAGE_STATE.door, 'ui-message')
    assert.strictEqual(AGUI_STATE.codec, AGUI_STATE_CODEC)
    assert.strictEqual(UI_MESSAGE_STATE.codec, UI_MESSAGE_STATE_CODEC)
  })
})

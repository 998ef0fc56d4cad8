import { test } from '@japa/runner'
import { EventType } from '@ag-ui/core'
import { FrameTranslator } from '../src/agui/translate/index.js'
import type { StreamFrame } from '../src/core/frames.js'

/**
 * Review of issue 26: a replay (superseded rows flagged) sends a replaced component once, where
 * it first was, and its latest version: never its intermediate versions. The bounded memory of
 * component ids must be touched by components themselves, not only by `ui` events.
 */
test.group('Review 26: replaced components on replay', () => {
  test('a superseded component met before is not sent again', ({ assert }) => {
    const translator = new FrameTranslator({ streamRunId: 'run_review_sup' })
    const version = (n: number): StreamFrame => ({
      t: 'component',
      name: 'card',
      id: 'k',
      data: { n },
    })
    const sent = [
      translator.push(version(1), { seq: 1 }, true),
      translator.push(version(2), { seq: 2 }, true),
      translator.push(version(3), { seq: 3 }, true),
      translator.push(version(4), { seq: 4 }, false),
    ].map((events) => events.filter((e) => e.type === EventType.ACTIVITY_SNAPSHOT).length)
    assert.deepEqual(sent, [1, 0, 0, 1])
  })
})

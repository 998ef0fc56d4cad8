import { test } from '@japa/runner'
import fc from 'fast-check'
import { jsonLength } from '../src/door/live_hub.js'

/**
 * The live fan-out's window counts its events' JSON length without making the JSON (issue 26:
 * a `JSON.stringify` per event duplicated the encoder's work): `jsonLength` is what
 * `JSON.stringify(value).length` is, give or take a comma per object or array (its last
 * member's) and what numbers and escapes really take.
 */
const plainString = fc.string({ unit: fc.constantFrom(...'abc xyz.019_-'.split('')) })
const plainJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    plainString,
    fc.boolean(),
    fc.constant(null),
    tie('array'),
    tie('object')
  ),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(plainString, tie('value'), { maxKeys: 5 }),
}))

function containers(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0
  const members = Object.values(value)
  return (members.length > 0 ? 1 : 0) + members.reduce((n: number, v) => n + containers(v), 0)
}

test.group('Live fan-out window (tests/live_hub_window.spec.ts)', () => {
  test('an event without numbers or escapes counts its JSON length, within a comma per container', () => {
    fc.assert(
      fc.property(plainJson.value, (value) => {
        const exact = JSON.stringify(value).length
        const counted = jsonLength(value)
        return counted >= exact && counted - exact <= containers(value)
      })
    )
  })

  test('an AG-UI text event counts about its JSON length; undefined members are left out as JSON does', ({
    assert,
  }) => {
    const event = {
      type: 'TEXT_MESSAGE_CONTENT',
      messageId: 'm-1',
      delta: 'héllo',
      rawEvent: undefined,
    }
    const exact = JSON.stringify(event).length
    assert.isAtLeast(jsonLength(event), exact)
    assert.isAtMost(jsonLength(event), exact + 1)
  })
})

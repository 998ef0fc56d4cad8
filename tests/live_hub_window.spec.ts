import { test } from '@japa/runner'
import fc from 'fast-check'
import { jsonLength } from '../src/core/json_length.js'

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

  test('a Map or a Set counts as the array of what it holds (a translator state kept in a checkpoint)', ({
    assert,
  }) => {
    const asArrays = (_: string, value: unknown) =>
      value instanceof Map || value instanceof Set ? [...value] : value
    fc.assert(
      fc.property(fc.array(fc.tuple(plainString, plainJson.value), { maxLength: 6 }), (entries) => {
        const state = { open: new Map(entries), ids: new Set(entries.map(([key]) => key)) }
        const exact = JSON.stringify(state, asArrays).length
        const counted = jsonLength(state)
        const slack = 3 + 2 * new Map(entries).size + containers(Object.fromEntries(entries))
        return counted >= exact && counted - exact <= slack
      })
    )
    assert.equal(jsonLength(new Map([['a', 1]])), JSON.stringify([['a', 1]]).length + 9)
  })
})

import { test } from '@japa/runner'
import fc from 'fast-check'
import {
  AGUI_ID_KINDS,
  AGUI_ID_MAX_LENGTH,
  decodeAgUiId,
  encodeAgUiId,
  type AgUiIdParts,
} from '../src/agui/ids.js'
import { InvalidAgUiIdError } from '../src/errors.js'

const runIdArb = fc.stringMatching(/^[A-Za-z0-9_:.-]{1,40}$/)
const segmentArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => s.isWellFormed()),
  fc.constantFrom(
    '',
    '/',
    '%',
    '%2F',
    '~',
    '-',
    '_',
    'a/b',
    '/005F',
    'a/005Fb',
    'é',
    '😀',
    '%E2%82',
    'x'.repeat(60)
  )
)
const partsArb: fc.Arbitrary<AgUiIdParts> = fc.record({
  runId: runIdArb,
  kind: fc.constantFrom(...AGUI_ID_KINDS),
  n: fc.nat(),
  address: fc.array(segmentArb, { maxLength: 4 }),
})
const PUBLIC = /^[A-Za-z0-9_:.-]{1,191}\/[a-z]+\/(0|[1-9][0-9]*)\/[A-Za-z0-9._%\/~-]*$/

test.group('AG-UI ids: one injective grammar', () => {
  test('decode(encode(x)) is x; every id matches the public pattern', () => {
    fc.assert(
      fc.property(partsArb, (parts) => {
        let id: string
        try {
          id = encodeAgUiId(parts)
        } catch (error) {
          // Only over-long ids are refused here, never truncated.
          return (
            error instanceof InvalidAgUiIdError && error.message.includes(`${AGUI_ID_MAX_LENGTH}`)
          )
        }
        if (!PUBLIC.test(id) || id.length > AGUI_ID_MAX_LENGTH) return false
        const back = decodeAgUiId(id)
        return back !== null && JSON.stringify(back) === JSON.stringify(parts)
      }),
      { numRuns: 2000 }
    )
  })

  test('distinct tuples give distinct ids', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(partsArb, { maxLength: 60, selector: (p) => JSON.stringify(p) }),
        (all) => {
          const ids = new Set<string>()
          for (const parts of all) {
            try {
              ids.add(encodeAgUiId(parts))
            } catch {
              return true
            }
          }
          return ids.size === all.length
        }
      ),
      { numRuns: 300 }
    )
  })

  test('the adversarial corpus: separators, escapes, the empty sentinel, non-ASCII', ({
    assert,
  }) => {
    const corpus: AgUiIdParts[] = [
      { runId: 'r', kind: 'msg', n: 0, address: [] },
      { runId: 'r', kind: 'msg', n: 0, address: [''] },
      { runId: 'r', kind: 'msg', n: 0, address: ['~'] },
      { runId: 'r', kind: 'msg', n: 0, address: ['', ''] },
      { runId: 'r', kind: 'tool', n: 1, address: ['a/b'] },
      { runId: 'r', kind: 'tool', n: 1, address: ['a', 'b'] },
      { runId: 'r', kind: 'tool', n: 1, address: ['%2F'] },
      { runId: 'r', kind: 'tool', n: 1, address: ['/005F'] },
      { runId: 'r', kind: 'sub', n: 10, address: ['é', '😀'] },
      { runId: 'r.1', kind: 'sub', n: 0, address: ['x'] },
    ]
    const ids = corpus.map(encodeAgUiId)
    assert.lengthOf(new Set(ids), corpus.length)
    for (const [i, id] of ids.entries()) assert.deepEqual(decodeAgUiId(id), corpus[i])
    assert.equal(ids[0], 'r/msg/0/~')
    assert.equal(ids[4], 'r/tool/1/a%2Fb')
    assert.equal(ids[5], 'r/tool/1/a/b')
  })

  test('refused, never truncated: lone surrogates, over-long, bad run ids and ordinals', ({
    assert,
  }) => {
    assert.throws(
      () => encodeAgUiId({ runId: 'r', kind: 'msg', n: 0, address: ['a\uD800'] }),
      /lone surrogate/
    )
    assert.throws(
      () => encodeAgUiId({ runId: 'r', kind: 'msg', n: 0, address: ['x'.repeat(2000)] }),
      /longer than/
    )
    assert.throws(() => encodeAgUiId({ runId: 'a/b', kind: 'msg', n: 0, address: [] }), /run id/)
    assert.throws(() => encodeAgUiId({ runId: '', kind: 'msg', n: 0, address: [] }), /run id/)
    assert.throws(() => encodeAgUiId({ runId: 'r', kind: 'msg', n: -1, address: [] }), /ordinal/)
    assert.throws(() => encodeAgUiId({ runId: 'r', kind: 'msg', n: 1.5, address: [] }), /ordinal/)
    assert.throws(
      () => encodeAgUiId({ runId: 'r', kind: 'nope' as any, n: 0, address: [] }),
      /kind/
    )
    // The refusal never quotes the value.
    const error = (() => {
      try {
        encodeAgUiId({ runId: 'r', kind: 'msg', n: 0, address: ['SECRET'.repeat(300)] })
      } catch (e) {
        return e as Error
      }
    })()
    assert.notInclude(error!.message, 'SECRET')
  })

  test('decoding refuses every spelling the encoder does not produce', ({ assert }) => {
    for (const bad of [
      'r/msg/01/~',
      'r/msg/0/%2f',
      'r/msg/0/%41',
      'r/msg/0/a b',
      'r/msg/0',
      'r/bogus/0/~',
      'r/msg/0/%C3',
      '/msg/0/~',
      'r/msg/-1/~',
    ]) {
      assert.isNull(decodeAgUiId(bad), bad)
    }
  })
})

import { test } from '@japa/runner'
import { parseCursor, type Cursor } from '../src/core/cursor.js'
import type { ReplayItem } from '../src/checkpoints/index.js'
import {
  afterSegmentEnd,
  checkedPosition,
  guardInput,
  idOnLast,
  invalidCursor,
  notFound,
  ownedBy,
  ownerOf,
  readAfterSegmentEnd,
  refusalOfError,
  serveLoop,
  streamGoesOn,
  translationKey,
  withoutIds,
  type StreamAfterEnd,
} from '../src/door/index.js'
import {
  AgUiBodyTooLargeError,
  DecisionConflictError,
  InvalidAgUiInputError,
  ReplicaShutdownError,
} from '../src/errors.js'
import { deliveryItem, positionOf } from '../src/sink/read_path.js'

/**
 * The door kernel's pure parts, without a database: the one verdict on what follows a segment
 * end, the ownership rule, the input guard and its refusals, the checkpoint key, and the serve
 * loop with the positions it passes on.
 */

const after = (patch: Partial<StreamAfterEnd> & { status?: string }): StreamAfterEnd => ({
  stream: { status: patch.status ?? 'ended' },
  nextEnd: patch.nextEnd ?? null,
  suspension: patch.suspension ?? null,
  pending: patch.pending ?? 0,
})

test.group('Door kernel: what follows a segment end', () => {
  test('one verdict for every case', ({ assert }) => {
    assert.equal(afterSegmentEnd(null), 'over')
    assert.equal(afterSegmentEnd(after({ status: 'open' })), 'goes-on')
    assert.equal(afterSegmentEnd(after({ status: 'open', suspension: 'cancelled' })), 'goes-on')
    assert.equal(afterSegmentEnd(after({ nextEnd: 9, suspension: 'cancelled' })), 'goes-on')
    assert.equal(afterSegmentEnd(after({ suspension: 'claimed', pending: 1 })), 'goes-on')
    assert.equal(afterSegmentEnd(after({ suspension: 'parked', pending: 0 })), 'goes-on')
    assert.equal(afterSegmentEnd(after({ suspension: 'parked', pending: 2 })), 'waits')
    assert.equal(afterSegmentEnd(after({ suspension: 'cancelled' })), 'cancelled')
    assert.equal(afterSegmentEnd(after({ suspension: 'resumed' })), 'over')
    assert.equal(afterSegmentEnd(after({ suspension: 'abandoned' })), 'over')
    assert.equal(afterSegmentEnd(after({ status: 'finished' })), 'over')
    assert.equal(afterSegmentEnd(after({ status: 'failed' })), 'over')
  })

  test('read in one snapshot after the end asked about; goes on only on `goes-on`', async ({
    assert,
  }) => {
    const asked: [string, number | undefined][] = []
    const parkingOf = (state: StreamAfterEnd | null) => ({
      parking: {
        queries: {
          streamAfter: async (streamRunId: string, end?: number) => {
            asked.push([streamRunId, end])
            return state as never
          },
        },
      },
    })
    assert.isTrue(await streamGoesOn(parkingOf(after({ status: 'open' })), 'run_a', 4))
    assert.isFalse(
      await streamGoesOn(parkingOf(after({ suspension: 'parked', pending: 1 })), 'run_a', 4)
    )
    assert.isFalse(await streamGoesOn(parkingOf(null), 'run_a', 4))
    const read = await readAfterSegmentEnd(parkingOf(after({ suspension: 'cancelled' })), 'run_b')
    assert.equal(read.verdict, 'cancelled')
    assert.deepEqual(asked, [
      ['run_a', 4],
      ['run_a', 4],
      ['run_a', 4],
      ['run_b', undefined],
    ])
  })
})

test.group('Door kernel: ownership, guard, refusals, key', () => {
  test('a run belongs to the principal that started it; an anonymous one to anonymous callers', ({
    assert,
  }) => {
    assert.equal(ownerOf({ id: 'ann' }), 'ann')
    assert.isNull(ownerOf(null))
    assert.isNull(ownerOf(undefined))
    assert.isTrue(ownedBy({ ownerId: 'ann' }, { id: 'ann' }))
    assert.isFalse(ownedBy({ ownerId: 'ann' }, { id: 'bob' }))
    assert.isFalse(ownedBy({ ownerId: 'ann' }, null))
    assert.isFalse(ownedBy({ ownerId: null }, { id: 'ann' }))
    assert.isTrue(ownedBy({ ownerId: null }, null))
  })

  test('errors to refusals: shutdown and input always, package errors when the door says so', ({
    assert,
  }) => {
    assert.deepInclude(refusalOfError(new ReplicaShutdownError()), {
      kind: 'refused',
      status: 503,
      code: 'replica_shutdown',
    })
    assert.deepEqual(refusalOfError(new InvalidAgUiInputError('The body must be JSON')), {
      kind: 'refused',
      status: 400,
      code: 'invalid_input',
      message: 'The body must be JSON',
    })
    assert.deepInclude(refusalOfError(new AgUiBodyTooLargeError(10)), {
      status: 413,
      code: 'body_too_large',
    })
    assert.isNull(refusalOfError(new DecisionConflictError()))
    assert.deepInclude(refusalOfError(new DecisionConflictError(), { packageErrors: true }), {
      status: 409,
      code: 'E_DECISION_CONFLICT',
    })
    assert.isNull(refusalOfError(new Error('boom'), { packageErrors: true }))
    assert.deepEqual(notFound(), {
      kind: 'refused',
      status: 404,
      code: 'not_found',
      message: 'No such run',
    })
    assert.equal(notFound('No such chat').message, 'No such chat')
    assert.deepEqual(invalidCursor(), {
      kind: 'refused',
      status: 400,
      code: 'invalid_cursor',
      message: 'Invalid cursor',
    })
  })

  test('the input guard: a draining replica reads nothing; a refused input answers; the rest throws', async ({
    assert,
  }) => {
    let acted = 0
    const act = async () => {
      acted++
      return 'served'
    }
    assert.deepInclude(await guardInput({ draining: true }, act), { status: 503 })
    assert.equal(acted, 0)
    assert.equal(await guardInput({ draining: false }, act), 'served')
    assert.equal(acted, 1)
    const refusedInput = await guardInput({ draining: false }, async () => {
      throw new InvalidAgUiInputError('A new run needs a user message with text')
    })
    assert.deepInclude(refusedInput, { status: 400, code: 'invalid_input' })
    // A drain that began while the request was checked.
    const drained = await guardInput({ draining: false }, async () => {
      throw new ReplicaShutdownError()
    })
    assert.deepInclude(drained, { status: 503 })
    await assert.rejects(
      () =>
        guardInput({ draining: false }, async () => {
          throw new DecisionConflictError()
        }),
      /./
    )
  })

  test('a re-attach cursor: decoded by the door grammar, refused when not minted or past the head', async ({
    assert,
  }) => {
    const asked: Cursor[] = []
    const sink = {
      beyondHead: async (_: string, cursor: Cursor) => {
        asked.push(cursor)
        return cursor.seq > 10
      },
    }
    const grammar = {
      parse: (id: string | undefined) => (id === undefined ? undefined : parseCursor(id)),
      cursor: (cursor: Cursor) => cursor,
    }
    assert.deepEqual(await checkedPosition(sink, 'run_a', undefined, grammar), {
      position: undefined,
    })
    assert.deepEqual(await checkedPosition(sink, 'run_a', '4.2', grammar), {
      position: { seq: 4, offset: 2 },
    })
    assert.deepEqual(await checkedPosition(sink, 'run_a', 'nope', grammar), invalidCursor())
    assert.deepEqual(await checkedPosition(sink, 'run_a', '11', grammar), invalidCursor())
    // No cursor and an id the door did not mint ask the store nothing.
    assert.deepEqual(asked, [{ seq: 4, offset: 2 }, { seq: 11 }])
  })

  test('the checkpoint key: the stream, its incarnation, the options that shape the state', ({
    assert,
  }) => {
    const key = translationKey('run_a', { createdAt: 5 }, { reasoning: true })
    assert.equal(key, translationKey('run_a', { createdAt: 5 }, { reasoning: true }))
    assert.notEqual(key, translationKey('run_a', { createdAt: 6 }, { reasoning: true }))
    assert.notEqual(key, translationKey('run_b', { createdAt: 5 }, { reasoning: true }))
    assert.notEqual(key, translationKey('run_a', { createdAt: 5 }, {}))
    assert.notEqual(key, translationKey('run_a', null, { reasoning: true }))
  })
})

/** Items as the sink's readers yield them (`deliveryItem`), each after row `seq`. */
function itemsOf(kinds: ('text' | 'end')[]): ReplayItem[] {
  return kinds.map((kind, i) => {
    const to = { seq: i + 1 }
    const delivery =
      kind === 'text' ? { kind, to, from: 0, text: `t${i + 1}`, bytes: 2 } : { kind, to, bytes: 0 }
    return deliveryItem(delivery as never, to, { segments: true })!
  })
}

async function* yielding<T>(items: T[]) {
  for (const item of items) yield item
}

test.group('Door kernel: the serve loop', () => {
  test('items of the sink keep their position: the Cursor they were made from, never parsed again', ({
    assert,
  }) => {
    const to: Cursor = { seq: 7, offset: 3 }
    const item = deliveryItem({ kind: 'text', to, from: 0, text: 'abc', bytes: 3 }, to)!
    assert.strictEqual(positionOf(item), to)
    assert.equal(item.cursor, '7.3')
    // Host code sees the public shape only: no position in a copy or its JSON.
    assert.deepEqual({ ...item }, { t: 'text', v: 'abc', cursor: '7.3' })
    assert.equal(JSON.stringify(item), '{"t":"text","v":"abc","cursor":"7.3"}')
    // An item made elsewhere: its cursor is parsed.
    assert.deepEqual(positionOf({ cursor: '4' }), { seq: 4 })
  })

  test('translates each item at its position, keeps the trail around it, frames ids, stops where a step ends', async ({
    assert,
  }) => {
    const items = itemsOf(['text', 'text', 'end', 'text'])
    const log: string[] = []
    const trail = {
      before: (at: Cursor) => log.push(`before ${at.seq}`),
      after: (_: unknown, at: Cursor) => log.push(`after ${at.seq}`),
    }
    const sent = []
    for await (const event of serveLoop<string>({
      items: yielding(items),
      trail: trail as never,
      step: (item, at) => {
        assert.strictEqual(at, positionOf(item))
        log.push(`step ${at.seq}`)
        if (item.t === 'end') return Promise.resolve({ events: ['close', 'finish'], ends: true })
        return { events: [`a${at.seq}`, `b${at.seq}`], ends: false }
      },
      ids: idOnLast,
    })) {
      sent.push(event)
    }
    assert.deepEqual(sent, [
      { event: 'a1' },
      { event: 'b1', id: '1' },
      { event: 'a2' },
      { event: 'b2', id: '2' },
      { event: 'close' },
      { event: 'finish', id: '3' },
    ])
    assert.deepEqual(log, [
      'before 1',
      'step 1',
      'after 1',
      'before 2',
      'step 2',
      'after 2',
      'before 3',
      'step 3',
      'after 3',
    ])
    assert.deepEqual(withoutIds(['x']), [{ event: 'x' }])
  })
})

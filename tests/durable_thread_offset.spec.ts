import { test } from '@japa/runner'
import { compareCursors, START, type Cursor } from '../src/core/cursor.js'
import {
  MAX_TURN,
  TURN_SPAN,
  threadCursor,
  threadPosition,
  type ThreadPosition,
} from '../src/durable_streams/dialects/thread_offset.js'
import { formatOffset, parseOffset } from '../src/durable_streams/protocol/offset.js'

/** (turn, cursor) order: by turn, then by the run's cursor. */
const comparePositions = (a: ThreadPosition, b: ThreadPosition) =>
  a.turn === b.turn ? compareCursors(a.cursor, b.cursor) : a.turn - b.turn

test.group('Durable Streams thread offsets', () => {
  test('one to one with (turn, cursor), and text order is their order', ({ assert }) => {
    const cursors: Cursor[] = [
      START,
      { seq: 1 },
      { seq: 3, offset: 0 },
      { seq: 3, offset: 12 },
      { seq: 3 },
      { seq: 40 },
      { seq: TURN_SPAN - 1, offset: 5 },
      { seq: TURN_SPAN - 1 },
    ]
    const positions: ThreadPosition[] = [{ turn: 0, cursor: START }]
    for (const turn of [1, 2, 10, MAX_TURN]) {
      for (const cursor of cursors) positions.push({ turn, cursor })
    }
    for (const position of positions) {
      const offset = formatOffset(threadCursor(position))
      const parsed = parseOffset(offset) as { cursor: Cursor }
      assert.deepEqual(threadPosition(parsed.cursor), position, offset)
    }
    for (const a of positions) {
      for (const b of positions) {
        const [x, y] = [formatOffset(threadCursor(a)), formatOffset(threadCursor(b))]
        const byText = x < y ? -1 : x === y ? 0 : 1
        assert.equal(byText, Math.sign(comparePositions(a, b)), `${x} ${y}`)
      }
    }
    // The turn reads first: turn 2 at row 7 is `000002` then `0000000007`.
    assert.equal(formatOffset(threadCursor({ turn: 2, cursor: { seq: 7 } })), '0000020000000007_')
  })

  test('a cursor no thread position is: inside turn 0, past the last turn', ({ assert }) => {
    assert.isNull(threadPosition({ seq: 5 }))
    assert.isNull(threadPosition({ seq: 0, offset: 3 }))
    assert.isNull(threadPosition({ seq: (MAX_TURN + 1) * TURN_SPAN }))
    assert.deepEqual(threadPosition(START), { turn: 0, cursor: START })
  })
})

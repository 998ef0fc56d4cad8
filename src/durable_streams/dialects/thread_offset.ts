import { START, type Cursor } from '../../core/cursor.js'

/**
 * A thread's Durable Stream positions: its turns in order (1, 2, 3 ...), each at a cursor of
 * that turn's run stream, as ONE cursor `{ seq: turn * 10^10 + seq, offset }`, so a thread's
 * offset is that cursor's offset (`protocol/offset.ts`): its 16 digits read as the turn (6
 * digits) then the seq within the turn (10 digits), then `_` or `.` and the text offset.
 * Text order is (turn, cursor) order; one to one with the pairs whose seq is below 10^10 (a
 * turn of ten billion rows); `0000000000000000_` (turn 0) is the thread's start, before every
 * turn. A turn's own start `(t, START)` and the previous turn's final position are two
 * positions of the same place: a reader at either gets turn `t` from its start.
 */
export const TURN_SPAN = 10_000_000_000

/** The largest turn a thread offset holds (the cursor's seq stays a safe integer). */
export const MAX_TURN = Math.floor((Number.MAX_SAFE_INTEGER - (TURN_SPAN - 1)) / TURN_SPAN)

/** A thread position: turn `turn` (1-based; 0 with `START`: before every turn) at `cursor`. */
export interface ThreadPosition {
  turn: number
  cursor: Cursor
}

/** The one cursor a thread position is. */
export function threadCursor({ turn, cursor }: ThreadPosition): Cursor {
  const seq = turn * TURN_SPAN + cursor.seq
  return cursor.offset === undefined ? { seq } : { seq, offset: cursor.offset }
}

/** The thread position a cursor is; `null` for one no thread position is. */
export function threadPosition(cursor: Cursor): ThreadPosition | null {
  const turn = Math.floor(cursor.seq / TURN_SPAN)
  const seq = cursor.seq - turn * TURN_SPAN
  const inner: Cursor = cursor.offset === undefined ? { seq } : { seq, offset: cursor.offset }
  if (turn === 0) return seq === 0 && cursor.offset === undefined ? { turn, cursor: START } : null
  return turn > MAX_TURN ? null : { turn, cursor: inner }
}

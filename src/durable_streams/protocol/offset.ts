import { compareCursors, START, type Cursor } from '../../core/cursor.js'

/**
 * Durable Streams offsets (PROTOCOL.md section 8: opaque, case-sensitive, strictly increasing,
 * lexicographically sortable, never `,&=?/`, under 256 characters), one to one with the
 * package's cursors (`core/cursor.ts`):
 *
 * | cursor | offset |
 * | --- | --- |
 * | `{ seq }` (after row `seq`) | `<seq, 16 digits>_` |
 * | `{ seq, offset }` (inside text row `seq`) | `<seq, 16 digits>.<offset, 16 digits>` |
 *
 * `.` sorts before `_`, so a position inside row `seq` sorts before the position after it, and
 * both before every position of row `seq + 1`: text order is cursor order ({@link compareCursors}).
 * The start of a stream (`START`, `{ seq: 0 }`) is `0000000000000000_`. The protocol's reserved
 * `-1` (the start) and `now` (the tail) are the read's to resolve ({@link parseOffset}).
 */

const WIDTH = 16
const OFFSET = /^([0-9]{16})(?:_|\.([0-9]{16}))$/

const pad = (value: number) => String(value).padStart(WIDTH, '0')

/** A cursor's offset. */
export function formatOffset(cursor: Cursor): string {
  return cursor.offset === undefined
    ? `${pad(cursor.seq)}_`
    : `${pad(cursor.seq)}.${pad(cursor.offset)}`
}

/** The offset of the start of a stream (what `-1` reads from). */
export const START_OFFSET = formatOffset(START)

/** What an `offset` query parameter asks for: a position, the start, or the tail. */
export type AskedOffset = { cursor: Cursor } | { tail: true }

/**
 * Decode an `offset` parameter: `-1` (or none) is the start, `now` the tail, else an offset
 * {@link formatOffset} minted; `null` for anything else (a malformed offset: 400).
 */
export function parseOffset(value: string | undefined | null): AskedOffset | null {
  if (value === undefined || value === null || value === '-1') return { cursor: START }
  if (value === 'now') return { tail: true }
  const match = OFFSET.exec(value)
  if (!match) return null
  const seq = Number(match[1])
  if (!Number.isSafeInteger(seq)) return null
  if (match[2] === undefined) return { cursor: { seq } }
  const offset = Number(match[2])
  if (!Number.isSafeInteger(offset)) return null
  return { cursor: { seq, offset } }
}

/** Whether offset `a` is before `b` (the same as comparing their text). */
export function offsetBefore(a: Cursor, b: Cursor): boolean {
  return compareCursors(a, b) < 0
}

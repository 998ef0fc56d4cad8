import { parseCursor, type Cursor } from '../../core/cursor.js'
import type { PositionGrammar } from '../../door/index.js'

/**
 * Where a client of the AG-UI door is: right after a stream cursor (what it has when it got a
 * frame's last event), or `k` events into the events of the frame stored at row `seq` (what it
 * has when it got only the first `k` of them).
 */
export type DoorPosition = { cursor: Cursor } | { seq: number; k: number }

/**
 * The door's SSE ids: a frame's last event carries the stream cursor after the frame (the
 * native grammar, `core/cursor.ts`); each earlier event of the frame carries `"<seq>:<k>"`, the
 * frame's row and how many of its events were sent up to and including this one (`k` at least
 * 1 and below the frame's event count). Short, derived from stored positions only, never
 * secret.
 */
const WITHIN = /^([1-9][0-9]{0,14}):([1-9][0-9]{0,8})$/

/** The SSE id of a frame's `k`-th event (1-based) when it is not the frame's last. */
export function withinFrameId(seq: number, k: number) {
  return `${seq}:${k}`
}

/**
 * Decode an id the door minted; `undefined` (no cursor) for `undefined`.
 *
 * @throws InvalidCursorError for anything else (from `parseCursor`)
 */
export function parseDoorPosition(value: string | undefined): DoorPosition | undefined {
  if (value === undefined) return undefined
  const within = WITHIN.exec(value)
  if (within) return { seq: Number(within[1]), k: Number(within[2]) }
  return { cursor: parseCursor(value) }
}

/**
 * The AG-UI door's id grammar for the kernel's cursor check (`checkedPosition`): an id inside a
 * frame stands at the start of that frame's row.
 */
export const AGUI_POSITIONS: PositionGrammar<DoorPosition> = {
  parse: parseDoorPosition,
  cursor: (position) => ('k' in position ? { seq: position.seq, offset: 0 } : position.cursor),
}

import { InvalidCursorError } from '../errors.js'

/**
 * A position in a stream: right after row `seq`, or, inside a coalesced text row, right after
 * its first `offset` UTF-16 code units.
 *
 * Wire form (the SSE `id:`): `"<seq>"` after a whole row, `"<seq>.<offset>"` inside or at the end
 * of a text row. `"0"` is the start of the stream. Every other string is refused.
 */
export interface Cursor {
  seq: number
  /** Code units of row `seq`'s text already seen; `undefined` = the whole row. */
  offset?: number
}

export const START: Cursor = { seq: 0 }

/** Whether `cursor` is the stream's start (nothing of it seen). */
export function isStart(cursor: Cursor): boolean {
  return cursor.seq === 0 && cursor.offset === undefined
}

const GRAMMAR = /^(0|[1-9][0-9]{0,14})(?:\.(0|[1-9][0-9]{0,14}))?$/

/** Encode a cursor to its wire form. */
export function formatCursor(cursor: Cursor): string {
  return cursor.offset === undefined ? String(cursor.seq) : `${cursor.seq}.${cursor.offset}`
}

/**
 * Decode a cursor's wire form. `undefined`, `null` and `''` mean the start of the stream.
 *
 * @throws InvalidCursorError when the string is not a cursor this package mints
 */
export function parseCursor(value: string | undefined | null): Cursor {
  if (value === undefined || value === null || value === '') return START
  const match = GRAMMAR.exec(value)
  if (!match) throw new InvalidCursorError()
  const seq = Number(match[1])
  return match[2] === undefined ? { seq } : { seq, offset: Number(match[2]) }
}

/**
 * Compare two positions. A whole-row cursor sorts after every offset in that row.
 * Returns a negative number, zero or a positive number.
 */
export function compareCursors(a: Cursor, b: Cursor): number {
  if (a.seq !== b.seq) return a.seq - b.seq
  const ao = a.offset ?? Number.POSITIVE_INFINITY
  const bo = b.offset ?? Number.POSITIVE_INFINITY
  return ao === bo ? 0 : ao < bo ? -1 : 1
}

/**
 * The cursor a re-attaching request names, by the one rule every door follows: a non-empty
 * `?after=` wins; otherwise a non-empty `Last-Event-ID` header (the SSE reconnect, WHATWG HTML
 * 9.2); otherwise none (from the start). An empty value counts as absent.
 */
export function requestCursor(query: unknown, lastEventId: unknown): string | undefined {
  if (typeof query === 'string' && query.length > 0) return query
  if (typeof lastEventId === 'string' && lastEventId.length > 0) return lastEventId
  return undefined
}

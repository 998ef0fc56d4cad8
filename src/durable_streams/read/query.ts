import type { Cursor } from '../../core/cursor.js'
import { parseOffset } from '../protocol/offset.js'
import type { DurableSource } from '../source.js'
import type { RawReply } from '../answer.js'
import { dsRefusal } from './headers.js'

/** A read as asked: from where (`tail`: `offset=now`), which live mode, the client's cursor. */
export interface ReadAsked {
  /** The position to read after. */
  after: Cursor
  /** `offset=now`: the tail, as the stream was when asked. */
  now: boolean
  /** The offset as asked (`-1` when none), for the ETag. */
  asked: string
  live: 'long-poll' | 'sse' | null
  cursor: string | undefined
}

const one = (value: unknown): string | undefined | null =>
  value === undefined ? undefined : typeof value === 'string' ? value : null

/**
 * The read's query (`offset`, `live`, `cursor`): 400 for an offset that is empty, repeated,
 * malformed or not a position of this stream (never answered empty), for an unknown `live`,
 * and for a live read without an offset.
 */
export async function readAsked(
  source: DurableSource,
  query: Record<string, unknown>
): Promise<ReadAsked | RawReply> {
  const offset = one(query.offset)
  const live = one(query.live)
  const cursor = one(query.cursor)
  if (offset === null || offset === '') return badOffset()
  if (live === null || cursor === null)
    return dsRefusal(400, 'invalid_query', 'A read parameter is repeated.')
  if (live !== undefined && live !== 'long-poll' && live !== 'sse')
    return dsRefusal(400, 'invalid_query', 'live must be long-poll or sse.')
  if (live && offset === undefined)
    return dsRefusal(400, 'invalid_query', 'A live read needs an offset.')
  const parsed = parseOffset(offset)
  if (!parsed) return badOffset()
  if ('tail' in parsed) {
    const head = await source.head()
    return { after: head.tail, now: true, asked: 'now', live: live ?? null, cursor }
  }
  if (!(await source.has(parsed.cursor))) return badOffset()
  return { after: parsed.cursor, now: false, asked: offset ?? '-1', live: live ?? null, cursor }
}

function badOffset() {
  return dsRefusal(400, 'invalid_offset', 'The offset is not one of this stream.')
}

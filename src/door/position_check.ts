import type { Cursor } from '../core/cursor.js'
import { InvalidCursorError } from '../errors.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { invalidCursor } from './refusals.js'
import type { Refused } from './reply.js'

/**
 * A door's grammar of the SSE ids it mints: `parse` decodes one (`undefined`: no cursor; throws
 * `InvalidCursorError` for an id the door cannot have minted); `cursor` is the stream position a
 * decoded id stands at or after.
 */
export interface PositionGrammar<P> {
  parse(after: string | undefined): P | undefined
  cursor(position: P): Cursor
}

/**
 * Where a re-attaching client is (the SSE `Last-Event-ID` or `?after=`), checked as every door
 * checks it: decoded by the door's grammar, and refused (400 `invalid_cursor`) for an id the door
 * cannot have minted or one past the stream's stored head (never given by any replica: followed,
 * it would wait for frames that may never come, and skip those that do). `known`: the stream's
 * row as the caller just read it (`beyondHead` then reads less).
 */
export async function checkedPosition<P>(
  sink: Pick<LucidTokenStreamSink, 'beyondHead'>,
  streamRunId: string,
  after: string | undefined,
  grammar: PositionGrammar<P>,
  known?: Parameters<LucidTokenStreamSink['beyondHead']>[2]
): Promise<{ position: P | undefined } | Refused> {
  let position: P | undefined
  try {
    position = grammar.parse(after)
  } catch (error) {
    if (error instanceof InvalidCursorError) return invalidCursor()
    throw error
  }
  if (position === undefined) return { position }
  if (await sink.beyondHead(streamRunId, grammar.cursor(position), known)) return invalidCursor()
  return { position }
}

import { compareCursors, parseCursor, type Cursor } from '../../core/cursor.js'
import type { SentEvent } from '../../door/reply.js'
import { InvalidCursorError } from '../../errors.js'
import type { SourceBatch } from '../source.js'

/**
 * A door's served events as Durable Streams batches: one batch per position a client of the
 * door can re-attach from, the events up to and including the one whose SSE id is that stream
 * cursor (the native grammar, `core/cursor.ts`: a frame's last event). Events without an id
 * (a run's opening) and ids inside a frame (AG-UI's `<seq>:<k>`) join the batch of the cursor
 * that follows them, so every offset is a cursor, one to one.
 *
 * A door serving from `after` re-opens what a client re-attaching there has (the useChat door's
 * `start`, AG-UI's `RUN_STARTED` and join prelude: events before its first id); a Durable Streams
 * reader at `after` has them already, as it has everything up to `after`: `resumed` drops that
 * opening, and any batch at or before `after` is dropped too (a door may send a finished run's
 * closing again).
 */
export async function* batchesOf<E>(
  events: AsyncIterable<SentEvent<E>>,
  after: Cursor,
  resumed: boolean
): AsyncGenerator<SourceBatch & { messages: E[] }> {
  let messages: E[] = []
  let opening = resumed
  for await (const { event, id } of events) {
    const cursor = id === undefined ? null : cursorOf(id)
    if (opening && id === undefined) continue
    opening = false
    messages.push(event)
    if (!cursor) continue
    const batch = { messages, next: cursor }
    messages = []
    if (compareCursors(cursor, after) > 0) yield batch
  }
}

/** The stream cursor an SSE id names, `null` for an id inside a frame. */
function cursorOf(id: string): Cursor | null {
  try {
    return parseCursor(id)
  } catch (error) {
    if (error instanceof InvalidCursorError) return null
    throw error
  }
}

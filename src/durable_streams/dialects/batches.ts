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
 * `start`: its first event; AG-UI's `RUN_STARTED` and join prelude: every event before its
 * first id, as the door ids each event of a frame); a Durable Streams reader at `after` has
 * them already, as it has everything up to `after`: `opening` says which to drop, and any
 * batch at or before `after` is dropped too (a door may send a finished run's closing again).
 */
export async function* batchesOf<E>(
  events: AsyncIterable<SentEvent<E>>,
  after: Cursor,
  opening: 'none' | 'first' | 'unnamed'
): AsyncGenerator<SourceBatch & { messages: E[] }> {
  let messages: E[] = []
  let index = 0
  let opened = opening === 'none'
  for await (const { event, id } of events) {
    const cursor = id === undefined ? null : cursorOf(id)
    const first = index++ === 0
    if (!opened && (opening === 'first' ? first : id === undefined)) continue
    opened = true
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

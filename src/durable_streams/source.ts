import type { Cursor } from '../core/cursor.js'

/**
 * What the Durable Streams read path (catch-up, long-poll, SSE, HEAD: `read/`) serves, whatever
 * the stream is: a stream created through the write path (any content type, `write/`), or a
 * run's or a thread's stream in one of the three dialects (the stored frames, AG-UI events, AI
 * SDK UI message chunks: `dialects/`). The read path owns every rule of the protocol (offsets,
 * headers, ETag, `Stream-Cursor`, chunk size, closure); a source only says what is there.
 */
export interface DurableSource {
  /** The stream's content type (`application/json` for every dialect). */
  contentType: string
  /** JSON mode (PROTOCOL.md 9.1): batches carry messages, a read answers one JSON array. */
  json: boolean
  /** Where the stream ends now, and whether it is closed (then `tail` is its final position). */
  head(): Promise<SourceHead>
  /**
   * What follows `after`, as batches in order, each with the position after it. `live: false`:
   * what is there now, then the iteration ends (at the tail, or at the end of a closed stream:
   * its last batch says `closed`). `live: true`: the same, then new batches as they commit,
   * until the stream closes (a last batch, possibly empty, says `closed`) or `signal` aborts.
   * A batch may be empty (no messages, no bytes) when only its position moved (frames a dialect
   * does not show).
   */
  batches(after: Cursor, read: { live: boolean; signal?: AbortSignal }): AsyncIterable<SourceBatch>
  /**
   * Whether `cursor` is a position of this stream (one a read of it could have given): a read
   * from any other is refused (400), never answered empty.
   */
  has(cursor: Cursor): Promise<boolean>
  /** Headers of this stream on every read and HEAD (a created stream's `Stream-TTL`, ...). */
  headers?(): Record<string, string>
  /** A read or write touched the stream (a created stream's sliding TTL). */
  touch?(): Promise<void>
}

/** Where a stream ends now. */
export interface SourceHead {
  tail: Cursor
  closed: boolean
}

/** Messages (JSON mode) or bytes, with the position after them. */
export interface SourceBatch {
  /** JSON mode: the messages (JSON values), else `undefined`. */
  messages?: unknown[]
  /** Byte mode: the bytes, else `undefined`. */
  bytes?: Uint8Array
  /** The position after this batch. */
  next: Cursor
  /** The stream is closed and `next` is its final position. */
  closed?: boolean
}

import type { Cursor } from '../core/cursor.js'

/**
 * What every door answers, whatever its protocol and whatever transport serves it: a refusal
 * before the stream opens, nothing (204), or a stream of events, each with its SSE `id:` when
 * it has one. The transports (`src/http/`) serve this union alone; a door adds only how its
 * events are written (its encoding).
 */

/** One event a door sends, with its SSE `id:` (a cursor a client may re-attach from), if any. */
export interface SentEvent<E> {
  event: E
  id?: string
}

/** A refusal before anything is sent: the status and `{ code, message }`; nothing was written. */
export interface Refused {
  kind: 'refused'
  status: number
  code: string
  message: string
  /** The run the refusal is about (`thread_busy`: the run the thread is busy with). */
  runId?: string
}

/**
 * A door's answer: {@link Refused}; `none` (nothing to serve: 204); or `stream`, the events
 * to send in order (`streamRunId`: the stream they come from, when there is one).
 */
export type DoorReply<E> =
  | Refused
  | { kind: 'none' }
  | {
      kind: 'stream'
      events: AsyncIterable<SentEvent<E>>
      streamRunId?: string
      /** Where in the stream the events start, when the door says (the useChat door's turns). */
      from?: Cursor
    }

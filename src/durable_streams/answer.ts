import type { Principal } from '../core/run.js'

/**
 * What the Durable Streams door is asked and answers, in the transport's terms but without it:
 * the door adapters' `DoorRequest` and `DoorAnswer` (`src/http/door_routes.ts`) carry these
 * shapes, so the route table hands them over as they are.
 */

/** A request as the door reads it. */
export interface DurableRequest {
  /** The query string; a repeated parameter as an array. */
  query: Record<string, unknown>
  /** The request's headers, by lower-case name. */
  headers: Record<string, string | undefined>
  method: string
  /** Who asks, `null` for nobody. */
  principal: Principal | null
  /** The raw body (`PUT`, `POST`). */
  bytes?: Uint8Array
  /** The full URL asked (a created stream's `Location`). */
  url?: string
  /** Aborts when the client goes away. */
  signal: AbortSignal
}

/** An answer whose status, headers and body the protocol sets. No body on a `HEAD`. */
export interface RawReply {
  kind: 'raw'
  status: number
  headers: Record<string, string>
  body?: string | Uint8Array
}

/** A streamed answer (SSE): its chunks, content type and headers. */
export interface StreamReply {
  kind: 'stream'
  chunks: AsyncGenerator<string | Uint8Array>
  contentType?: string
  headers?: Record<string, string>
}

/** What the door answers. */
export type DurableAnswer = RawReply | StreamReply

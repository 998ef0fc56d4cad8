/**
 * The headers of every streamed response, on both transports (the Node SSE writer and the
 * Fetch-API handlers): the SSE content type, and no caching or proxy buffering, so each event
 * reaches the client as it is written.
 */

/** The content type of an SSE response. */
export const SSE_CONTENT_TYPE = 'text/event-stream; charset=utf-8'

/** Sent with every streamed response, SSE or not. */
export const STREAM_HEADERS = Object.freeze({
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
})

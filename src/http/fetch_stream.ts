import { DEFAULTS } from '../defaults.js'
import { SSE_CONTENT_TYPE, STREAM_HEADERS } from './stream_headers.js'

/** Options of {@link streamResponse}. */
export interface StreamResponseOptions {
  /** A `: ping` comment after this long without a write, in milliseconds (SSE only). Default 15000. */
  heartbeatMs?: number
  /** Not SSE (e.g. AG-UI protobuf): this content type, and no heartbeat. Default: SSE. */
  contentType?: string
  /** More headers (a protocol's own, e.g. `x-vercel-ai-ui-message-stream`). */
  headers?: Record<string, string>
  /**
   * The client went away before the chunks ended (the request's signal aborted, or the body was
   * cancelled): called once, after `chunks` is closed (`abortOnDisconnect`).
   */
  onDisconnect?: () => void
  /** The stream ended, however (done, failed, cancelled, its client gone): called once. */
  onEnd?: () => void
}

/**
 * Requests whose response is streaming. A `Request`'s signal follows the one it was made with
 * only while the `Request` is reachable (undici links them weakly): each is kept here until its
 * stream ends, so a client that goes away always ends its reader.
 */
const streaming = new Set<Request>()

/**
 * Wire chunks as a Fetch-API `Response` (200, `text/event-stream` unless `contentType` says
 * otherwise, {@link STREAM_HEADERS}), for the Fetch-API handlers. The body is pulled as the client
 * reads (one chunk queued ahead at most: backpressure), with a heartbeat while idle (SSE) that
 * is skipped while the queue is full: a client that does not read gets nothing queued for it.
 * When the request's signal aborts (the client went away), `chunks` is closed (`return()`) even
 * if nobody cancels the body: a reader waiting on a full socket lets go of what it holds. An
 * error from `chunks` errors the body (the client sees a cut stream).
 */
export function streamResponse(
  chunks: AsyncGenerator<string | Uint8Array>,
  request: Request,
  options: StreamResponseOptions = {}
): Response {
  return new Response(byteStream(chunks, request, options), {
    headers: {
      'Content-Type': options.contentType ?? SSE_CONTENT_TYPE,
      ...STREAM_HEADERS,
      ...options.headers,
    },
  })
}

function byteStream(
  chunks: AsyncGenerator<string | Uint8Array>,
  request: Request,
  options: StreamResponseOptions
) {
  const encoder = new TextEncoder()
  const heartbeatMs = options.heartbeatMs ?? DEFAULTS.heartbeatMs
  let timer: NodeJS.Timeout | undefined
  let lastWrite = Date.now()
  const { signal } = request
  streaming.add(request)
  let ended = false
  const stop = async () => {
    if (!ended) options.onEnd?.()
    ended = true
    clearInterval(timer)
    signal.removeEventListener('abort', onAbort)
    streaming.delete(request)
    await chunks.return(undefined)
  }
  const disconnected = async () => {
    if (ended) return
    // The client went away: the run is told first (abort on disconnect), whatever ending the
    // reader then takes (it may wait for a pending read, or fail), as the AdonisJS adapter does.
    try {
      options.onDisconnect?.()
    } finally {
      await stop()
    }
  }
  const onAbort = () => void disconnected().catch(() => {})
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (!options.contentType) timer = heartbeat(controller)
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
    },
    async pull(controller) {
      let next: IteratorResult<string | Uint8Array>
      try {
        next = await chunks.next()
      } catch (error) {
        await stop().catch(() => {})
        throw error
      }
      lastWrite = Date.now()
      if (next.done) {
        await stop()
        controller.close()
        return
      }
      controller.enqueue(typeof next.value === 'string' ? encoder.encode(next.value) : next.value)
    },
    async cancel() {
      await disconnected()
    },
  })

  function heartbeat(controller: ReadableStreamDefaultController<Uint8Array>) {
    const interval = setInterval(
      () => {
        if (Date.now() - lastWrite < heartbeatMs || (controller.desiredSize ?? 0) <= 0) return
        lastWrite = Date.now()
        try {
          controller.enqueue(encoder.encode(': ping\n\n'))
        } catch {
          clearInterval(interval)
        }
      },
      Math.max(10, Math.floor(heartbeatMs / 2))
    )
    interval.unref?.()
    return interval
  }
}

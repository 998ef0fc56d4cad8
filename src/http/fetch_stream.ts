import { DEFAULTS } from '../defaults.js'
import { Wake } from '../core/wake.js'
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

/** What the turn's end resolves to, in a pull's race ({@link streamResponse}). */
const TURN = Symbol('turn')
/** A pull takes chunks ready in the same turn up to about this many bytes (UTF-16 units of text). */
const BATCH_BYTES = 65_536

/**
 * Requests whose response is streaming. A `Request`'s signal follows the one it was made with
 * only while the `Request` is reachable (undici links them weakly): each is kept here until its
 * stream ends, so a client that goes away always ends its reader.
 */
const streaming = new Set<Request>()

/**
 * Wire chunks as a Fetch-API `Response` (200, `text/event-stream` unless `contentType` says
 * otherwise, {@link STREAM_HEADERS}), for the Fetch-API handlers. The body is pulled as the client
 * reads (one chunk queued ahead at most: backpressure; a chunk of the body is every wire chunk
 * ready in one turn of the event loop, up to 64 KiB, so a replay is not one socket write per
 * event), with a heartbeat while idle (SSE) that
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
  /** A chunk asked for and not ready when the last pull's turn ended. */
  let held: Promise<IteratorResult<string | Uint8Array>> | null = null
  const joined = (batch: (string | Uint8Array)[]): Uint8Array => {
    if (batch.every((chunk) => typeof chunk === 'string')) return encoder.encode(batch.join(''))
    const parts = batch.map((chunk) => (typeof chunk === 'string' ? encoder.encode(chunk) : chunk))
    return parts.length === 1 ? parts[0] : Buffer.concat(parts)
  }
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
      let batch: (string | Uint8Array)[] = []
      let done = false
      try {
        done = await take(batch)
      } catch (error) {
        // What was taken before the error still goes out, then the body fails.
        if (batch.length > 0) controller.enqueue(joined(batch))
        batch = []
        await stop().catch(() => {})
        throw error
      }
      lastWrite = Date.now()
      if (batch.length > 0) controller.enqueue(joined(batch))
      if (done) {
        await stop()
        controller.close()
      }
    },
    async cancel() {
      await disconnected()
    },
  })

  /**
   * Take the chunks ready in this turn of the event loop into `batch` (at least one, unless the
   * chunks ended; up to {@link BATCH_BYTES}): they go out as one chunk, one socket write, not
   * one per event. A chunk not ready before the turn ends is left for the next pull (`held`).
   * Returns whether the chunks ended.
   */
  async function take(batch: (string | Uint8Array)[]): Promise<boolean> {
    let bytes = 0
    let turn: Wake<typeof TURN> | null = null
    while (bytes < BATCH_BYTES) {
      const pending = held ?? chunks.next()
      held = null
      let next: IteratorResult<string | Uint8Array> | typeof TURN
      if (batch.length === 0) next = await pending
      else {
        if (!turn) {
          const ends = (turn = new Wake<typeof TURN>())
          setImmediate(() => ends.fire(TURN))
        }
        next = await turn.race(pending)
      }
      if (next === TURN) {
        // Not ready in this turn: the next pull takes it (its failure, if it fails, then).
        held = pending
        return false
      }
      if (next.done) return true
      batch.push(next.value)
      bytes += next.value.length
    }
    return false
  }

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

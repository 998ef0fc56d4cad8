import type { IncomingMessage, ServerResponse } from 'node:http'
import type { SseItem } from '../agui/door/index.js'
import { DEFAULTS } from '../defaults.js'
import { agUiChunks, agUiContentType, wantsProtobuf, type Chunk } from './agui_encoding.js'
import { SSE_CONTENT_TYPE, STREAM_HEADERS } from './stream_headers.js'

export interface SseOptions {
  /** A comment line (`: ping`) after this long without a write, in milliseconds. Default 15000. */
  heartbeatMs?: number
}

/**
 * Serve a stream of chunks over one HTTP response (`text/event-stream` unless `contentType`
 * says otherwise): headers flushed at once, a comment heartbeat while idle (SSE only), a slow
 * client waited for (`drain`), never buffered without bound. Resolves when the chunks end or
 * the client goes away (then `controller` aborts and `onClose` runs).
 */
export async function serveChunks(
  req: IncomingMessage,
  res: ServerResponse,
  chunks: AsyncIterable<Chunk>,
  options: SseOptions & {
    contentType?: string
    onClose?: () => void
    controller?: AbortController
    /** Headers the framework holds for this response (CORS, cookies): sent with ours. */
    headers?: Record<string, unknown>
  } = {}
) {
  const sse = !options.contentType
  const held: Record<string, any> = {}
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value !== undefined && value !== null) held[name] = value
  }
  res.writeHead(200, {
    ...held,
    'Content-Type': options.contentType ?? SSE_CONTENT_TYPE,
    ...STREAM_HEADERS,
    'Connection': 'keep-alive',
  })
  res.flushHeaders()
  req.socket.setNoDelay(true)
  let closed = false
  const onClose = () => {
    if (closed) return
    closed = true
    options.controller?.abort()
    options.onClose?.()
  }
  res.on('close', () => {
    if (!res.writableFinished) onClose()
  })
  // The client may have gone while the request was being checked: no 'close' will come.
  if (res.destroyed || req.socket.destroyed) onClose()
  // Chunks within one turn of the event loop go out together as ONE chunk (a concatenated
  // string or buffer): one `write` and one syscall per viewer per batch, not one per event nor a
  // `writev` of many pieces (issue 26: socket writes were a quarter of a busy replica's time).
  // What is held counts toward the response's high-water mark: past it, the batch is flushed and
  // waited for, so a batch holds at most the high-water mark plus the chunk that passed it. The
  // batches of every response are flushed by one `setImmediate` (`FLUSHING`), not one each.
  let pending: Chunk[] = []
  let pendingBytes = 0
  let flushQueued = false
  const highWater = res.writableHighWaterMark
  const flush = () => {
    flushQueued = false
    if (pending.length === 0 || closed) {
      pending = []
      pendingBytes = 0
      return true
    }
    const batch = pending
    pending = []
    pendingBytes = 0
    return res.write(joinChunks(batch))
  }
  /** A chunk held for the batch; a promise only when the client must be waited for. */
  const write = (chunk: Chunk): Promise<void> | undefined => {
    if (closed) return
    pending.push(chunk)
    pendingBytes += chunk.length
    if (pendingBytes + res.writableLength < highWater) {
      if (!flushQueued) {
        flushQueued = true
        queueFlush(flush)
      }
      return
    }
    // A slow client: flush what is pending and wait for it, never buffer without bound.
    if (flush() || !res.writableNeedDrain) return
    return new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done)
        res.off('close', done)
        resolve()
      }
      res.on('drain', done)
      res.on('close', done)
    })
  }
  let lastWrite = Date.now()
  const heartbeatMs = options.heartbeatMs ?? DEFAULTS.heartbeatMs
  // A client that does not read gets no ping: it would only queue behind the frames.
  const ping = () => {
    if (
      !closed &&
      pending.length === 0 &&
      !res.writableNeedDrain &&
      Date.now() - lastWrite >= heartbeatMs
    ) {
      lastWrite = Date.now()
      res.write(': ping\n\n')
    }
  }
  const stopPings = sse ? heartbeats(heartbeatMs, ping) : null
  try {
    for await (const chunk of chunks) {
      if (closed) break
      lastWrite = Date.now()
      const waited = write(chunk)
      if (waited) await waited
    }
  } finally {
    stopPings?.()
    flushQueued = false
    flush()
    if (!closed) res.end()
  }
}

/** Flushes due this turn of the event loop, run by one `setImmediate` for all responses. */
let FLUSHING: (() => unknown)[] = []

function queueFlush(flush: () => unknown) {
  if (FLUSHING.length === 0) setImmediate(flushAll)
  FLUSHING.push(flush)
}

function flushAll() {
  const due = FLUSHING
  FLUSHING = []
  for (const flush of due) flush()
}

/**
 * The heartbeat checks of every response with the same period, run by one timer (every
 * `heartbeatMs / 2`, at least 10 ms; unref'd) instead of a timer per response; the returned
 * function removes a response's check (the timer stops with the last).
 */
const HEARTBEATS = new Map<number, { checks: Set<() => void>; timer: NodeJS.Timeout }>()

function heartbeats(heartbeatMs: number, check: () => void): () => void {
  let beat = HEARTBEATS.get(heartbeatMs)
  if (!beat) {
    const checks = new Set<() => void>()
    const timer = setInterval(
      () => {
        for (const each of checks) each()
      },
      Math.max(10, Math.floor(heartbeatMs / 2))
    )
    timer.unref()
    HEARTBEATS.set(heartbeatMs, (beat = { checks, timer }))
  }
  const { checks, timer } = beat
  checks.add(check)
  return () => {
    checks.delete(check)
    if (checks.size === 0 && HEARTBEATS.get(heartbeatMs)?.checks === checks) {
      clearInterval(timer)
      HEARTBEATS.delete(heartbeatMs)
    }
  }
}

/** Chunks as one: strings joined, bytes concatenated (a protobuf stream's are all bytes). */
function joinChunks(chunks: Chunk[]): Chunk {
  if (chunks.length === 1) return chunks[0]
  if (chunks.every((chunk) => typeof chunk === 'string')) return chunks.join('')
  return Buffer.concat(
    chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk))
  )
}

/** AG-UI events over one HTTP response: SSE, or protobuf when the client asked for exactly it. */
export function serveAgUiEvents(
  req: IncomingMessage,
  res: ServerResponse,
  events: AsyncIterable<SseItem>,
  options: SseOptions & {
    onClose?: () => void
    controller?: AbortController
    headers?: Record<string, unknown>
  } = {}
) {
  const protobuf = wantsProtobuf(req.headers.accept)
  return serveChunks(req, res, agUiChunks(events, protobuf), {
    ...options,
    ...(protobuf ? { contentType: agUiContentType(true) } : {}),
  })
}

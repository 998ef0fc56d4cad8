import type { IncomingMessage, ServerResponse } from 'node:http'
import { EventEncoder, AGUI_MEDIA_TYPE } from '@ag-ui/encoder'
import type { SseItem } from '../agui/door/door.js'

export interface SseOptions {
  /** A comment line (`: ping`) after this long without a write, in milliseconds. Default 15000. */
  heartbeatMs?: number
}

/** Whether the client asked for exactly the AG-UI protobuf media type (never `*\/*`). */
export function wantsProtobuf(accept: string | undefined) {
  return (accept ?? '')
    .split(',')
    .some((part) => part.split(';')[0].trim().toLowerCase() === AGUI_MEDIA_TYPE)
}

/** How one event is written on the wire. */
export type Chunk = string | Uint8Array

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
    'Content-Type': options.contentType ?? 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    'X-Accel-Buffering': 'no',
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
  // Writes within one turn of the event loop go out together (one syscall, not one per event).
  let corked = false
  const uncork = () => {
    if (!corked) return
    corked = false
    res.uncork()
  }
  const write = async (chunk: Chunk) => {
    if (closed) return
    if (!corked) {
      corked = true
      res.cork()
      setImmediate(uncork)
    }
    if (!res.write(chunk)) {
      // A slow client: flush what is held and wait for it, never buffer without bound.
      uncork()
      if (!res.writableNeedDrain) return
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done)
          res.off('close', done)
          resolve()
        }
        res.on('drain', done)
        res.on('close', done)
      })
    }
  }
  let lastWrite = Date.now()
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const heartbeat = sse
    ? setInterval(
        () => {
          if (!closed && Date.now() - lastWrite >= heartbeatMs) {
            lastWrite = Date.now()
            res.write(': ping\n\n')
          }
        },
        Math.max(10, Math.floor(heartbeatMs / 2))
      )
    : null
  heartbeat?.unref()
  try {
    for await (const chunk of chunks) {
      if (closed) break
      lastWrite = Date.now()
      await write(chunk)
    }
  } finally {
    if (heartbeat) clearInterval(heartbeat)
    uncork()
    if (!closed) res.end()
  }
}

/**
 * AG-UI events as SSE (LF framing; `id:` from the stream cursor on a frame's last event) or, when
 * the client asked for exactly `application/vnd.ag-ui.event+proto`, AG-UI's length-prefixed
 * protobuf (`@ag-ui/encoder`).
 */
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
  const encoder = new EventEncoder({ accept: protobuf ? AGUI_MEDIA_TYPE : 'text/event-stream' })
  async function* chunks(): AsyncGenerator<Chunk> {
    for await (const item of events) {
      if (protobuf) yield encoder.encodeBinary(item.event)
      // The encoder writes `data: <json>\n\n` (optional nulls dropped); the id goes first.
      else yield (item.id ? `id: ${item.id}\n` : '') + encoder.encodeSSE(item.event)
    }
  }
  return serveChunks(req, res, chunks(), {
    ...options,
    ...(protobuf ? { contentType: AGUI_MEDIA_TYPE } : {}),
  })
}

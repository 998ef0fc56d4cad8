import type { IncomingMessage, ServerResponse } from 'node:http'
import { EventEncoder, AGUI_MEDIA_TYPE } from '@ag-ui/encoder'
import type { SseItem } from './door.js'

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

/**
 * Serve events over one HTTP response: SSE (`text/event-stream`, LF framing, `id:` from the
 * stream cursor, a comment heartbeat while idle) or, when the client asked for exactly
 * `application/vnd.ag-ui.event+proto`, AG-UI's length-prefixed protobuf. Headers are flushed at
 * once; a slow client is waited for (`drain`), never buffered without bound. Resolves when the
 * events end or the client goes away (then `onClose` runs).
 */
export async function serveEvents(
  req: IncomingMessage,
  res: ServerResponse,
  events: AsyncIterable<SseItem>,
  options: SseOptions & { onClose?: () => void; controller?: AbortController } = {}
) {
  const protobuf = wantsProtobuf(req.headers.accept)
  const encoder = new EventEncoder({ accept: protobuf ? AGUI_MEDIA_TYPE : 'text/event-stream' })
  res.writeHead(200, {
    'Content-Type': protobuf ? AGUI_MEDIA_TYPE : 'text/event-stream; charset=utf-8',
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

  const write = async (chunk: string | Uint8Array) => {
    if (closed) return
    if (!res.write(chunk)) {
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
  const heartbeat = protobuf
    ? null
    : setInterval(
        () => {
          if (!closed && Date.now() - lastWrite >= heartbeatMs) {
            lastWrite = Date.now()
            res.write(': ping\n\n')
          }
        },
        Math.max(10, Math.floor(heartbeatMs / 2))
      )
  heartbeat?.unref()
  try {
    for await (const item of events) {
      if (closed) break
      lastWrite = Date.now()
      if (protobuf) {
        await write(encoder.encodeBinary(item.event as any))
      } else {
        // The encoder writes `data: <json>\n\n` (optional nulls dropped); the id goes first.
        await write((item.id ? `id: ${item.id}\n` : '') + encoder.encodeSSE(item.event as any))
      }
    }
  } finally {
    if (heartbeat) clearInterval(heartbeat)
    if (!closed) res.end()
  }
}

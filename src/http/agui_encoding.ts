import { EventEncoder, AGUI_MEDIA_TYPE } from '@ag-ui/encoder'
import type { SseItem } from '../agui/door/index.js'
import { SSE_CONTENT_TYPE } from './stream_headers.js'

/** How one event is written on the wire. */
export type Chunk = string | Uint8Array

/** Whether the client asked for exactly the AG-UI protobuf media type (never `*\/*`). */
export function wantsProtobuf(accept: string | null | undefined) {
  return (accept ?? '')
    .split(',')
    .some((part) => part.split(';')[0].trim().toLowerCase() === AGUI_MEDIA_TYPE)
}

/** The response's content type for what the client accepts. */
export function agUiContentType(protobuf: boolean) {
  return protobuf ? AGUI_MEDIA_TYPE : SSE_CONTENT_TYPE
}

/**
 * The SSE bytes of items the door shares between viewers (frozen: its live fan-out's,
 * `src/agui/door/live_hub.ts`), written once for all of them.
 */
const SHARED_SSE = new WeakMap<SseItem, string>()

/**
 * AG-UI events as wire chunks, for any transport: SSE (LF framing; the door's `id:` on every
 * event after the join prelude) or, when the client asked for exactly
 * `application/vnd.ag-ui.event+proto`, AG-UI's length-prefixed protobuf (`@ag-ui/encoder`).
 */
export async function* agUiChunks(
  events: AsyncIterable<SseItem>,
  protobuf: boolean
): AsyncGenerator<Chunk> {
  const encoder = new EventEncoder({ accept: protobuf ? AGUI_MEDIA_TYPE : 'text/event-stream' })
  for await (const item of events) {
    if (protobuf) yield encoder.encodeBinary(item.event)
    // The encoder writes `data: <json>\n\n` (optional nulls dropped); the id goes first.
    else if (Object.isFrozen(item)) {
      let chunk = SHARED_SSE.get(item)
      if (chunk === undefined) SHARED_SSE.set(item, (chunk = sseChunk(encoder, item)))
      yield chunk
    } else yield sseChunk(encoder, item)
  }
}

function sseChunk(encoder: EventEncoder, item: SseItem) {
  return (item.id ? `id: ${item.id}\n` : '') + encoder.encodeSSE(item.event)
}

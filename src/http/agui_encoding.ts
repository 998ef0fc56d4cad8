import { EventEncoder, AGUI_MEDIA_TYPE } from '@ag-ui/encoder'
import type { SseItem } from '../agui/door/index.js'
import { forClient, type ClientProfile } from '../agui/compat/index.js'
import { SSE_CONTENT_TYPE } from './stream_headers.js'
import { sharedChunks } from './shared_chunks.js'

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
 * AG-UI events as wire chunks, for any transport: SSE (LF framing; the door's `id:` on every
 * event after the join prelude) or, when the client asked for exactly
 * `application/vnd.ag-ui.event+proto`, AG-UI's length-prefixed protobuf (`@ag-ui/encoder`).
 * With a client's `profile`, each event is first mapped for it (`forClient`: one left out sends
 * nothing, its id neither; one unchanged keeps its item, whose encoding is shared), in the same
 * step: a replay's every event passes here, and a generator layer per step costs it.
 */
export async function* agUiChunks(
  events: AsyncIterable<SseItem>,
  protobuf: boolean,
  profile?: ClientProfile
): AsyncGenerator<Chunk> {
  const encoder = protobuf ? new EventEncoder({ accept: AGUI_MEDIA_TYPE }) : null
  for await (let item of events) {
    if (profile) {
      const event = forClient(item.event, profile)
      if (!event) continue
      if (event !== item.event) item = { ...item, event }
    }
    if (encoder) yield encoder.encodeBinary(item.event)
    // The encoder writes `data: <json>\n\n` (optional nulls dropped); the id goes first.
    else yield sse(item)
  }
}

/** The SSE encoder (it keeps no state between events). */
const SSE_ENCODER = new EventEncoder({ accept: 'text/event-stream' })

/** An item's SSE text (the fan-out's shared items encoded once: `sharedChunks`). */
const sse = sharedChunks<SseItem>(
  (item) => (item.id ? `id: ${item.id}\n` : '') + SSE_ENCODER.encodeSSE(item.event)
)

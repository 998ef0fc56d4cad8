import type { UiChunkItem } from '../ui_message/door/index.js'
import { sharedChunks } from './shared_chunks.js'

/**
 * The headers of the AI SDK UI message stream (`ai`'s `UI_MESSAGE_STREAM_HEADERS`, spelled out
 * so the package never loads `ai` at runtime): SSE, and the protocol's version header.
 */
export const UI_MESSAGE_STREAM_HEADER = { 'x-vercel-ai-ui-message-stream': 'v1' } as const

/** An item's SSE text (the fan-out's shared items encoded once: `sharedChunks`). */
const sseOf = sharedChunks<UiChunkItem>(
  (item) => `${item.id ? `id: ${item.id}\n` : ''}data: ${JSON.stringify(item.event)}\n\n`
)

/**
 * UI message chunks as SSE, as `ai`'s `JsonToSseTransformStream` writes them: `data: <json>`
 * per chunk (the door's `id:` first when it has one), then `data: [DONE]`.
 */
export async function* uiMessageSse(items: AsyncIterable<UiChunkItem>): AsyncGenerator<string> {
  for await (const item of items) yield sseOf(item)
  yield 'data: [DONE]\n\n'
}

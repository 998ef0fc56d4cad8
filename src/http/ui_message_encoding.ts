import type { UiChunkItem } from '../ui_message/door/index.js'

/**
 * The headers of the AI SDK UI message stream (`ai`'s `UI_MESSAGE_STREAM_HEADERS`, spelled out
 * so the package never loads `ai` at runtime): SSE, and the protocol's version header.
 */
export const UI_MESSAGE_STREAM_HEADER = { 'x-vercel-ai-ui-message-stream': 'v1' } as const

/** The SSE bytes of items the door shares between viewers (`src/door/live_hub.ts`). */
const SHARED_SSE = new WeakMap<UiChunkItem, string>()

const sseOf = (item: UiChunkItem) =>
  `${item.id ? `id: ${item.id}\n` : ''}data: ${JSON.stringify(item.event)}\n\n`

/**
 * UI message chunks as SSE, as `ai`'s `JsonToSseTransformStream` writes them: `data: <json>`
 * per chunk (the door's `id:` first when it has one), then `data: [DONE]`.
 */
export async function* uiMessageSse(items: AsyncIterable<UiChunkItem>): AsyncGenerator<string> {
  for await (const item of items) {
    // A frozen item is shared by the viewers of the door's live fan-out: encoded once.
    if (!Object.isFrozen(item)) {
      yield sseOf(item)
      continue
    }
    let chunk = SHARED_SSE.get(item)
    if (chunk === undefined) SHARED_SSE.set(item, (chunk = sseOf(item)))
    yield chunk
  }
  yield 'data: [DONE]\n\n'
}

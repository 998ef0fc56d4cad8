import { EventType } from '@ag-ui/core'
import type { UserPart } from '../../core/frames.js'
import type { UserMessage } from '../../core/user_message.js'
import type { AgUiEvent } from './types.js'

/** A transcript entry as it is built: an AG-UI 1.0 message, completed event by event. */
type Entry = Record<string, any>

/**
 * The transcript of what was sent, as AG-UI 1.0 messages (`MESSAGES_SNAPSHOT`): assistant text
 * with its tool calls, tool results, activity, reasoning when sent, in order. Built from the
 * translator's own events, so it holds exactly what the client was given. PURE.
 */
export class Transcript {
  #messages: Entry[] = []

  /** A copy of the messages so far (see `FrameTranslator.checkpoint`). */
  save(): Entry[] {
    return structuredClone(this.#messages)
  }

  /** Take the messages {@link save} gave (a copy). */
  load(saved: Entry[]) {
    this.#messages = structuredClone(saved)
  }

  #byId(id: unknown) {
    return this.#messages.find((m) => m.id === id)
  }

  /** Fold one sent event into the transcript (events that are not messages change nothing). */
  record(event: AgUiEvent) {
    const who =
      'subagentRunId' in event && event.subagentRunId ? { subagentRunId: event.subagentRunId } : {}
    switch (event.type) {
      case EventType.TEXT_MESSAGE_START:
        if (!this.#byId(event.messageId))
          this.#messages.push({ id: event.messageId, role: 'assistant', content: '', ...who })
        break
      case EventType.TEXT_MESSAGE_CONTENT:
      case EventType.REASONING_MESSAGE_CONTENT: {
        const message = this.#byId(event.messageId)
        if (message) message.content = `${message.content ?? ''}${event.delta}`
        break
      }
      case EventType.TOOL_CALL_START: {
        const calls = this.#messages.flatMap((m) => m.toolCalls ?? [])
        if (calls.some((c: { id: string }) => c.id === event.toolCallId)) break
        // As the client applies it: the parent message, made when it has no text.
        const known = this.#byId(event.parentMessageId)
        let parent = known
        if (parent?.role !== 'assistant') {
          const id = known || !event.parentMessageId ? event.toolCallId : event.parentMessageId
          parent = { id, role: 'assistant', toolCalls: [], ...who }
          this.#messages.push(parent)
        }
        parent.toolCalls ??= []
        parent.toolCalls.push({
          id: event.toolCallId,
          type: 'function',
          function: { name: event.toolCallName, arguments: '' },
        })
        break
      }
      case EventType.TOOL_CALL_ARGS: {
        for (const message of this.#messages) {
          const call = message.toolCalls?.find((c: { id: string }) => c.id === event.toolCallId)
          if (call) call.function.arguments += event.delta
        }
        break
      }
      case EventType.TOOL_CALL_RESULT:
        this.#messages.push({
          id: event.messageId,
          role: 'tool',
          toolCallId: event.toolCallId,
          content: event.content,
          ...who,
        })
        break
      case EventType.ACTIVITY_SNAPSHOT: {
        const message = {
          id: event.messageId,
          role: 'activity',
          activityType: event.activityType,
          content: event.content,
          ...who,
        }
        const index = this.#messages.findIndex((m) => m.id === event.messageId)
        if (index === -1) this.#messages.push(message)
        else this.#messages[index] = message
        break
      }
      case EventType.REASONING_MESSAGE_START:
        this.#messages.push({ id: event.messageId, role: 'reasoning', content: '', ...who })
        break
    }
  }

  /** What the person said (a run's `user-message` frame), as AG-UI's user message. */
  user(message: UserMessage) {
    if (this.#byId(message.id)) return
    this.#messages.push({ id: message.id, role: 'user', content: agUiContent(message.parts) })
  }

  /** A copy of the transcript so far. */
  messages(): Record<string, unknown>[] {
    return structuredClone(this.#messages)
  }
}

/** The AG-UI content part kind of a media type (`image`, `audio`, `video`, else `document`). */
function mediaKind(mediaType: string): 'image' | 'audio' | 'video' | 'document' {
  const top = mediaType.split('/')[0]
  return top === 'image' || top === 'audio' || top === 'video' ? top : 'document'
}

/**
 * What the person said as AG-UI 1.0 user content (PURE): a string when it is one text, else its
 * parts: `text`, and `image` / `audio` / `video` / `document` with a
 * `data` source (a `data:` URL, base64) or a `url` source.
 */
export function agUiContent(parts: UserPart[]): string | Record<string, unknown>[] {
  if (parts.length === 0) return ''
  if (parts.length === 1 && parts[0].type === 'text') return parts[0].text
  return parts.map((part) => {
    if (part.type === 'text') return { type: 'text', text: part.text }
    const data = /^data:([^;,]*)(;[^,]*)?,(.*)$/s.exec(part.url)
    const base64 = data?.[2]?.split(';').includes('base64')
    const source =
      data && base64
        ? { type: 'data', value: data[3], mimeType: part.mediaType }
        : { type: 'url', value: part.url, mimeType: part.mediaType }
    return {
      type: mediaKind(part.mediaType),
      source,
      ...(part.filename ? { metadata: { filename: part.filename } } : {}),
    }
  })
}

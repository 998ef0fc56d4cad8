import type { AssistantMessage, InputContent, Message, ToolCall } from '@ag-ui/core'
import type { StreamFrame, UserPart } from '../../core/frames.js'
import { userMessageOf } from '../../core/user_message.js'

/** The fixed sentence a tool message carries for a call that did not run, per status. */
export const NOT_RUN_SENTENCES = {
  rejected: 'A person rejected this tool call; it did not run.',
  expired: 'Nobody approved this tool call in time; it did not run.',
  cancelled: 'The run was cancelled before this tool call ran.',
} as const

/** What a person said as an AG-UI user message's content: one text as a string, else parts. */
function userContent(parts: UserPart[]): string | InputContent[] {
  if (parts.length === 1 && parts[0].type === 'text') return parts[0].text
  return parts.map((part): InputContent => {
    if (part.type === 'text') return { type: 'text', text: part.text }
    const data = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(part.url)
    const source = data
      ? { type: 'data' as const, value: data[3], mimeType: part.mediaType }
      : { type: 'url' as const, value: part.url, mimeType: part.mediaType }
    const kind = part.mediaType.startsWith('image/')
      ? 'image'
      : part.mediaType.startsWith('audio/')
        ? 'audio'
        : part.mediaType.startsWith('video/')
          ? 'video'
          : 'document'
    return { type: kind, source } as InputContent
  })
}

const json = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null))

/**
 * The AG-UI messages a thread's stored frames stand for (PURE), as a client would hold them in
 * `agent.messages`: a `user-message` event is a user message; the assistant's text and tool
 * calls between two tool results are one assistant message (`content`, `toolCalls` with their
 * arguments as JSON text); `tool-output` / `tool-output-error` / `tool-output-denied` a tool
 * message (`content` the output's JSON, an error's text with `error`, a fixed sentence for a call
 * that did not run). A result whose call is not among the frames (a question set's answers) and
 * everything else (reasoning, steps, settlements, custom events) are left out. Ids are minted
 * from `prefix` and the message's position, the same on every rebuild.
 */
export function framesToAgUiMessages(frames: Iterable<StreamFrame>, prefix: string): Message[] {
  const messages: Message[] = []
  let assistant: AssistantMessage | null = null
  const calls = new Set<string>()
  const id = () => `${prefix}-${messages.length}`
  const open = (): AssistantMessage => {
    if (!assistant) {
      assistant = { id: id(), role: 'assistant' }
      messages.push(assistant)
    }
    return assistant
  }
  const tool = (toolCallId: string, content: string, error?: string) => {
    if (!calls.has(toolCallId)) return
    assistant = null
    messages.push({
      id: id(),
      role: 'tool',
      toolCallId,
      content,
      ...(error !== undefined ? { error } : {}),
    })
  }
  for (const frame of frames) {
    const said = userMessageOf(frame)
    if (said) {
      assistant = null
      messages.push({ id: said.id || id(), role: 'user', content: userContent(said.parts) })
      continue
    }
    if (frame.t === 'text') {
      const message = open()
      message.content = (message.content ?? '') + frame.v
      continue
    }
    if (frame.t !== 'event') continue
    const event = frame.event
    switch (event.kind) {
      case 'tool-input-available': {
        if (calls.has(event.id)) break
        calls.add(event.id)
        const call: ToolCall = {
          id: event.id,
          type: 'function',
          function: { name: event.name, arguments: json(event.input ?? {}) },
        }
        const message = open()
        message.toolCalls = [...(message.toolCalls ?? []), call]
        break
      }
      case 'tool-output':
        tool(event.id, json(event.output))
        break
      case 'tool-output-error': {
        const text = json(event.error)
        tool(event.id, text, text)
        break
      }
      case 'tool-output-denied':
        tool(
          event.id,
          event.reason && event.status === 'rejected'
            ? event.reason
            : NOT_RUN_SENTENCES[event.status ?? 'rejected']
        )
        break
    }
  }
  return messages
}

/**
 * `messages` without the tool calls nothing answered (PURE): what an earlier turn left when it
 * was stopped, failed or lost its replica mid-tool. An LLM behind the agent refuses a call
 * without its result (OpenAI, Anthropic: 400), so an earlier turn's open call would fail every
 * later turn of the thread. An assistant message left with neither text nor calls is dropped.
 */
export function withoutUnansweredCalls(messages: Message[]): Message[] {
  const answered = new Set(
    messages.flatMap((message) => (message.role === 'tool' ? [message.toolCallId] : []))
  )
  return messages.flatMap((message): Message[] => {
    if (message.role !== 'assistant' || !message.toolCalls) return [message]
    const toolCalls = message.toolCalls.filter((call) => answered.has(call.id))
    if (toolCalls.length === message.toolCalls.length) return [message]
    const kept: AssistantMessage = { ...message, toolCalls }
    if (toolCalls.length === 0) delete kept.toolCalls
    return kept.content || kept.toolCalls ? [kept] : []
  })
}

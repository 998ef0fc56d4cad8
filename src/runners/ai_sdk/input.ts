import {
  convertToModelMessages,
  type ModelMessage,
  type TextPart,
  type UIMessage,
  type UserModelMessage,
} from 'ai'
import { contextText } from '../shared/context.js'

/**
 * The conversation a run starts from, as model messages, from the run's input
 * (`RunContext.input`, stored with the run, so a resume reads the same):
 * - a string: one user message;
 * - the AG-UI door's `{ message, context }` (the newest user message's text; `context` is the
 *   client's, given to the model as data in the person's own message, {@link withContext});
 * - `{ messages }`: model messages, or UI messages (`parts`, as `useChat` sends them), converted
 *   with the AI SDK's `convertToModelMessages`; with `message` too, it follows them.
 * Anything else: no messages (the model gets only the system prompt).
 */
export async function inputMessages(input: unknown): Promise<ModelMessage[]> {
  if (typeof input === 'string') return [{ role: 'user', content: input }]
  if (!input || typeof input !== 'object') return []
  const { message, messages } = input as { message?: unknown; messages?: unknown }
  const out: ModelMessage[] = []
  if (Array.isArray(messages) && messages.length > 0) {
    const isUi = messages.every((m) => m && typeof m === 'object' && Array.isArray(m.parts))
    out.push(
      ...(isUi
        ? await convertToModelMessages(messages as UIMessage[])
        : (messages as ModelMessage[]))
    )
  }
  if (typeof message === 'string' && message.length > 0) {
    out.push({ role: 'user', content: message })
  }
  return out
}

/** The client's context ({@link contextText}) as one text part, or `null` when there is none. */
export function contextPart(input: unknown): TextPart | null {
  const text = contextText(input)
  return text === null ? null : { type: 'text', text }
}

/**
 * `messages` (what a run adds to the conversation: its input's, then its own) with the client's
 * context ({@link contextPart}) in the role the client has, the person's: the first part of the
 * first user message, or a user message of its own before them when there is none. Never a
 * system message: what a client sends must not get the host's authority over the model (the
 * AI SDK refuses system messages in `messages` for that reason, and so does this runner).
 */
export function withContext(messages: ModelMessage[], input: unknown): ModelMessage[] {
  const part = contextPart(input)
  if (!part) return messages
  const at = messages.findIndex((message) => message.role === 'user')
  if (at === -1) return [{ role: 'user', content: [part] }, ...messages]
  const user = messages[at] as UserModelMessage
  const content: UserModelMessage['content'] =
    typeof user.content === 'string'
      ? [part, { type: 'text', text: user.content }]
      : [part, ...user.content]
  return messages.with(at, { ...user, content })
}

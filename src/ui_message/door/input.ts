import vine from '@vinejs/vine'
import { RUN_ID } from '../../core/frames.js'
import { isWellFormedDeep } from '../../core/text.js'
import { DEPTH_ISSUE, tooDeep } from '../../core/json_depth.js'
import type { UserPart } from '../../core/frames.js'
import { checkUserMessage, type UserMessage } from '../../core/user_message.js'
import { describeIssues, InvalidAgUiInputError, issuesOf } from '../../errors.js'

/** Limits on a chat request (sizes in bytes, counts in items, text in UTF-16 units). */
export const CHAT_LIMITS = {
  messages: 500,
  parts: 1000,
  /** Characters of the newest user message the run takes as input. */
  messageChars: 32_768,
  reasonChars: 2000,
  /** Bytes (JSON) of the request's own fields (`DefaultChatTransport({ body })`), `ctx.input.body`. */
  bodyBytes: 65_536,
} as const

/**
 * The fields of `DefaultChatTransport`'s body that are the transport's, not the app's (`state`,
 * the page's state, is the runner's `ctx.input.state`, checked by `pageState` of src/core/agent_state.ts).
 */
const TRANSPORT_FIELDS = new Set(['id', 'messages', 'trigger', 'messageId', 'state'])

const SUBJECT = 'Invalid chat request'

const chatValidator = vine.compile(
  vine
    .object({
      /** The chat: the thread its turns are runs of. */
      id: vine.string().regex(RUN_ID),
      messages: vine
        .array(
          vine
            .object({
              id: vine.string().minLength(1).maxLength(191),
              role: vine.enum(['system', 'user', 'assistant'] as const),
              parts: vine.array(vine.any()).maxLength(CHAT_LIMITS.parts),
            })
            .allowUnknownProperties()
        )
        .minLength(1)
        .maxLength(CHAT_LIMITS.messages),
      trigger: vine.enum(['submit-message', 'regenerate-message'] as const).optional(),
      messageId: vine.string().maxLength(191).optional(),
    })
    .allowUnknownProperties()
)

/** A chat request once validated: what the door reads of it. */
export type ChatInput = Awaited<ReturnType<typeof chatValidator.validate>>
export type ChatMessage = ChatInput['messages'][number]

/**
 * Validate `DefaultChatTransport`'s body (`{ id, messages, trigger, messageId, ...body }`) with
 * VineJS: the chat id (the run id grammar), counts and sizes. Depth and well-formed Unicode
 * first, as for every body (its size was checked by the transport, on the bytes received:
 * `maxBodyBytes`, 413 `body_too_large`). Unknown keys (the app's own `body`) are ignored.
 *
 * @throws InvalidAgUiInputError (400 `invalid_input`, naming the rule)
 */
export async function validateChatInput(body: unknown): Promise<ChatInput> {
  if (tooDeep(body)) throw new InvalidAgUiInputError(describeIssues(SUBJECT, [DEPTH_ISSUE]))
  if (!isWellFormedDeep(body)) {
    throw new InvalidAgUiInputError(
      describeIssues(SUBJECT, [{ field: '', rule: 'wellFormedUnicode' }])
    )
  }
  let input: ChatInput
  try {
    input = await chatValidator.validate(body)
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    throw new InvalidAgUiInputError(describeIssues(SUBJECT, issues.slice(0, 1)))
  }
  // The newest message is the request: the person's (a new turn) or the assistant's (answers).
  // A client's `system` message has no authority here, and is no turn either.
  if (input.messages[input.messages.length - 1].role === 'system') {
    throw invalidPart('messages.*.role', 'userOrAssistant')
  }
  return input
}

/** A rule a message's parts break (the value is never quoted). */
export function invalidPart(field: string, rule: string): InvalidAgUiInputError {
  return new InvalidAgUiInputError(describeIssues(SUBJECT, [{ field, rule }]))
}

/** The text of a user message: its `text` parts joined. @throws InvalidAgUiInputError */
export function userText(message: ChatMessage): string {
  let text = ''
  for (const part of message.parts as unknown[]) {
    const p = part as { type?: unknown; text?: unknown } | null
    if (p && p.type === 'text') {
      if (typeof p.text !== 'string') throw invalidPart('messages.*.parts.*.text', 'string')
      text += p.text
    }
  }
  if (text.length > CHAT_LIMITS.messageChars) {
    throw invalidPart('messages.*.parts.*.text', 'maxLength')
  }
  return text
}

/**
 * What the person said in `message` (a user message), as stored: its `text` and `file` parts
 * (other parts, such as `data-*`, are the client's own and not kept), checked by the one rule
 * (`checkUserMessage`: counts, media types, URLs, something said, the frame cap `maxFrameBytes`).
 *
 * @throws InvalidAgUiInputError
 */
export function userMessage(message: ChatMessage, maxFrameBytes: number): UserMessage {
  const parts: UserPart[] = []
  for (const part of message.parts as unknown[]) {
    const p = part as Record<string, unknown> | null
    if (p?.type === 'text') parts.push({ type: 'text', text: p.text as string })
    else if (p?.type === 'file') {
      parts.push({
        type: 'file',
        mediaType: p.mediaType as string,
        url: p.url as string,
        ...(p.filename !== undefined ? { filename: p.filename as string } : {}),
      })
    }
  }
  return checkUserMessage(SUBJECT, { id: message.id, parts }, maxFrameBytes)
}

/**
 * The app's own fields of the request (`DefaultChatTransport({ body })`, or `sendMessage`'s
 * `{ body }`): every key but the transport's, as the runner's `ctx.input.body`; `undefined` when
 * there are none. At most {@link CHAT_LIMITS}`.bodyBytes` bytes of JSON.
 *
 * @throws InvalidAgUiInputError (rule `maxBytes` on `body`)
 */
export function bodyFields(input: ChatInput): Record<string, unknown> | undefined {
  const entries = Object.entries(input).filter(([key]) => !TRANSPORT_FIELDS.has(key))
  if (entries.length === 0) return undefined
  const body = Object.fromEntries(entries)
  if (Buffer.byteLength(JSON.stringify(body)) > CHAT_LIMITS.bodyBytes) {
    throw invalidPart('body', 'maxBytes')
  }
  return body
}

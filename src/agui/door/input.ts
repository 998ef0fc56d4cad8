import vine from '@vinejs/vine'
import type { FieldContext } from '@vinejs/vine/types'
import { createHash } from 'node:crypto'
import { RUN_ID } from '../../core/frames.js'
import { isWellFormedDeep } from '../../core/text.js'
import { DEPTH_ISSUE, tooDeep } from '../../core/json_depth.js'
import { DEFAULTS } from '../../defaults.js'
import { isMintedRunId } from '../ids.js'
import type { UserPart } from '../../core/frames.js'
import { checkUserMessage, type UserMessage } from '../../core/user_message.js'
import { describeIssues, InvalidAgUiInputError, issuesOf } from '../../errors.js'

// Re-exported for the door, which imports it from here (the class lives in src/errors.ts).
export { InvalidAgUiInputError }

/** Limits on a `RunAgentInput` body (docs/design.md, "Input"). Sizes in bytes or items. */
export const INPUT_LIMITS = {
  messages: 500,
  tools: 64,
  context: 64,
  /** Entries of a resume: every item one segment may park on ({@link DEFAULTS}). */
  resume: DEFAULTS.maxItemsPerSegment,
  /** Characters of the newest user message the run takes as input. */
  messageChars: 32_768,
  /** Bytes (JSON) of `forwardedProps`, the runner's `ctx.input.forwardedProps`. */
  forwardedPropsBytes: 65_536,
} as const

/** Thread and run ids: the run id grammar (they key streams and mint door ids). */
const id = () => vine.string().regex(RUN_ID)

/** Refuses a run id in the door's own namespace (ids the server mints for itself). */
const notMinted = vine.createRule((value: unknown, _: undefined, field: FieldContext) => {
  if (typeof value === 'string' && isMintedRunId(value)) {
    field.report(
      'The {{ field }} field uses a prefix reserved for the server',
      'notReserved',
      field
    )
  }
})

/**
 * A run id a client may choose: the run id grammar, outside the server's own namespace
 * (`agent-stream:`), so no client can take an id the server will mint (a continuation's).
 */
export const clientRunId = () => id().use(notMinted())

const inputValidator = vine.compile(
  vine.object({
    threadId: id(),
    runId: clientRunId(),
    parentRunId: id().optional(),
    protocolVersion: vine.string().maxLength(16).optional(),
    messages: vine
      .array(
        vine
          .object({
            id: vine.string().minLength(1).maxLength(191),
            role: vine.enum([
              'user',
              'assistant',
              'system',
              'developer',
              'tool',
              'activity',
              'reasoning',
            ] as const),
            content: vine.any().optional(),
          })
          .allowUnknownProperties()
      )
      .maxLength(INPUT_LIMITS.messages),
    tools: vine
      .array(
        vine
          .object({
            name: vine.string().minLength(1).maxLength(128),
            description: vine.string().maxLength(4096),
            parameters: vine.any().optional(),
          })
          .allowUnknownProperties()
      )
      .maxLength(INPUT_LIMITS.tools)
      .optional(),
    context: vine
      .array(
        vine.object({
          description: vine.string().maxLength(4096),
          value: vine.string().maxLength(32_768),
        })
      )
      .maxLength(INPUT_LIMITS.context)
      .optional(),
    resume: vine
      .array(
        vine.object({
          interruptId: vine.string().minLength(1).maxLength(1024),
          status: vine.enum(['resolved', 'cancelled'] as const),
          payload: vine.any().optional(),
        })
      )
      .maxLength(INPUT_LIMITS.resume)
      .optional(),
    forwardedProps: vine.any().optional(),
    // The page's state: checked by the door (`pageState` of src/core/agent_state.ts: a JSON
    // object, the `maxStateBytes` cap).
    state: vine.any().optional(),
  })
)

/** A `RunAgentInput` once validated: what the door reads of it. */
export type AgUiInput = Awaited<ReturnType<typeof inputValidator.validate>>
export type AgUiResumeEntry = NonNullable<AgUiInput['resume']>[number]

/**
 * Validate a `RunAgentInput` body (AG-UI 1.0) with VineJS: ids, counts, string sizes. The
 * body's depth (`MAX_JSON_DEPTH`, `src/core/json_depth.ts`) is checked first; its size was, by
 * the transport, on the bytes received (`maxBodyBytes`, 413 `body_too_large`).
 *
 * @throws InvalidAgUiInputError (400 `invalid_input`, also for a body nested too deep or a lone
 *   surrogate anywhere in it, rule `wellFormedUnicode`)
 */
export async function validateAgUiInput(body: unknown): Promise<AgUiInput> {
  if (tooDeep(body)) {
    throw new InvalidAgUiInputError(describeIssues('Invalid RunAgentInput', [DEPTH_ISSUE]))
  }
  // Messages, ids and resume payloads come back in events: no lone surrogate on the wire.
  if (!isWellFormedDeep(body)) {
    const issue = { field: '', rule: 'wellFormedUnicode' }
    throw new InvalidAgUiInputError(describeIssues('Invalid RunAgentInput', [issue]))
  }
  let input: AgUiInput
  try {
    input = await inputValidator.validate(body)
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    throw new InvalidAgUiInputError(describeIssues('Invalid RunAgentInput', issues.slice(0, 1)))
  }
  const props = input.forwardedProps
  if (
    props !== undefined &&
    Buffer.byteLength(JSON.stringify(props ?? null)) > INPUT_LIMITS.forwardedPropsBytes
  ) {
    const issue = { field: 'forwardedProps', rule: 'maxBytes' }
    throw new InvalidAgUiInputError(describeIssues('Invalid RunAgentInput', [issue]))
  }
  return input
}

/**
 * `forwardedProps` as the runner's `ctx.input.forwardedProps`: `undefined` when absent or an
 * empty object (what `HttpAgent` sends by default).
 */
export function forwardedPropsOf(input: AgUiInput): unknown {
  const props = input.forwardedProps
  if (props === undefined || props === null) return undefined
  if (typeof props === 'object' && !Array.isArray(props) && Object.keys(props).length === 0) {
    return undefined
  }
  return props
}

const MEDIA_PARTS = new Set(['image', 'audio', 'video', 'document'])

/** A media part's source as a file URL and media type, or `null` when it has none we keep. */
function fileOf(part: Record<string, unknown>): UserPart | null {
  const source = part.source as Record<string, unknown> | undefined
  if (!source || typeof source !== 'object' || typeof source.value !== 'string') return null
  const mediaType = typeof source.mimeType === 'string' ? source.mimeType : null
  const metadata = part.metadata as { filename?: unknown } | undefined
  const filename =
    metadata && typeof metadata.filename === 'string' ? { filename: metadata.filename } : {}
  if (source.type === 'data' && mediaType) {
    return { type: 'file', mediaType, url: `data:${mediaType};base64,${source.value}`, ...filename }
  }
  if (source.type === 'url') {
    const fallback = part.type === 'document' ? 'application/octet-stream' : `${part.type}/*`
    return { type: 'file', mediaType: mediaType ?? fallback, url: source.value, ...filename }
  }
  return null
}

/**
 * What the person said in an AG-UI user message, as stored: a string content as one text part;
 * content parts as `text` and files (`image` / `audio` / `video` / `document` with a `data` or
 * `url` source), checked by the one rule (`checkUserMessage`, the frame cap `maxFrameBytes`).
 *
 * @throws InvalidAgUiInputError for a part of another kind or source (rule `contentPart`), or
 *   one `checkUserMessage` refuses
 */
export function userMessageOf(
  message: { id: string; content?: unknown },
  maxFrameBytes: number
): UserMessage {
  const content = message.content
  const parts: UserPart[] = []
  if (typeof content === 'string') parts.push({ type: 'text', text: content })
  else if (Array.isArray(content)) {
    for (const raw of content) {
      const part = (raw ?? {}) as Record<string, unknown>
      if (part.type === 'text' && typeof part.text === 'string') {
        parts.push({ type: 'text', text: part.text })
        continue
      }
      const file = MEDIA_PARTS.has(part.type as string) ? fileOf(part) : null
      if (!file) {
        const issue = { field: 'messages.*.content.*', rule: 'contentPart' }
        throw new InvalidAgUiInputError(describeIssues('Invalid RunAgentInput', [issue]))
      }
      parts.push(file)
    }
  }
  return checkUserMessage('Invalid RunAgentInput', { id: message.id, parts }, maxFrameBytes)
}

/** A `tool` message answering a call the client ran (frontend tools). */
export interface ToolResultMessage {
  /** The AG-UI tool call id the client was given. */
  toolCallId: string
  content: string
}

function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return null
  const parts = content.filter(
    (part: unknown): part is { type: 'text'; text: string } =>
      typeof part === 'object' &&
      part !== null &&
      (part as { type?: unknown }).type === 'text' &&
      typeof (part as { text?: unknown }).text === 'string'
  )
  return parts.length > 0 ? parts.map((part) => part.text).join('\n') : null
}

/**
 * What is new in a `RunAgentInput`: the messages after the last assistant message (all of them
 * on a thread's first run): the newest user message's text, and `tool` messages (results of
 * frontend tools). History comes from the server, never from the client's `messages`.
 *
 * @throws InvalidAgUiInputError when there is neither a user message with text or a file nor
 *   a tool result, or a text is too long
 */
export function newInput(input: AgUiInput): {
  text: string | null
  toolResults: ToolResultMessage[]
  /** The newest user message (for what the person said, `userMessageOf`). */
  user: AgUiInput['messages'][number] | null
} {
  const last = input.messages.findLastIndex((m) => m.role === 'assistant')
  const fresh = input.messages.slice(last + 1)
  const user = fresh.findLast((m) => m.role === 'user')
  let text = user ? textOf(user.content) : null
  if (text !== null && text.trim().length === 0) text = null
  // A message of files only is a message too (what it says is checked by `userMessageOf`).
  const said = user !== undefined && (text !== null || hasMedia(user.content))
  const toolResults: ToolResultMessage[] = []
  for (const message of fresh) {
    if (message.role !== 'tool') continue
    const toolCallId = (message as { toolCallId?: unknown }).toolCallId
    const content = textOf(message.content)
    if (typeof toolCallId !== 'string' || toolCallId.length > 1024 || content === null) {
      throw new InvalidAgUiInputError('A tool message needs a toolCallId and text content')
    }
    toolResults.push({ toolCallId, content })
  }
  if (!said && toolResults.length === 0) {
    throw new InvalidAgUiInputError('A new run needs a user message with text or a file')
  }
  for (const value of [text ?? '', ...toolResults.map((r) => r.content)]) {
    if (value.length > INPUT_LIMITS.messageChars) {
      throw new InvalidAgUiInputError(`A message exceeds ${INPUT_LIMITS.messageChars} characters`)
    }
  }
  return { text, toolResults, user: said ? user : null }
}

/** Whether AG-UI message content has a media part (`image`, `audio`, `video`, `document`). */
function hasMedia(content: unknown): boolean {
  return (
    Array.isArray(content) &&
    content.some((part) => MEDIA_PARTS.has((part as { type?: unknown } | null)?.type as string))
  )
}

/** JSON with object keys sorted, so equal values hash equal whatever order a client sent. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value ?? null)
}

/**
 * SHA-256 (hex) of a resume: the thread and every entry's interrupt id, status and payload,
 * whatever their order (AG-UI interrupts rule 5: a repeat of the same resume is safe).
 */
export function resumeHash(threadId: string, resume: AgUiResumeEntry[]): string {
  const entries = [...resume]
    .map((entry) => canonical([entry.interruptId, entry.status, entry.payload ?? null]))
    .sort()
  return createHash('sha256')
    .update(canonical([threadId, entries]))
    .digest('hex')
}

import { InvalidAgUiInputError, describeIssues } from '../errors.js'
import { USER_MESSAGE, type StreamFrame, type UserPart } from './frames.js'

/**
 * What a person said, as a run's frame (the reserved event `user-message`, `core/frames.ts`), and
 * the rules every door applies to it before anything is written. PURE.
 */

/** A person's message: the client's id and its parts. */
export interface UserMessage {
  id: string
  parts: UserPart[]
}

/** Limits on one person's message (files count whole: a `data:` URL is its bytes). */
export const USER_MESSAGE_LIMITS = {
  /** Parts of one message. */
  parts: 64,
  /** A file's media type, in characters. */
  mediaTypeChars: 255,
  /** A file's name, in characters. */
  filenameChars: 255,
} as const

/** The schemes a file part's URL may have (the AI SDK's UI `file` part). */
const FILE_URL = /^(https?:|data:)/i

/** A media type as `type/subtype` (parameters allowed). */
const MEDIA_TYPE = /^[\w.+-]+\/[\w.+*-]+(;.*)?$/

/** The frame that stores `message` in its run's stream. */
export function userMessageFrame(message: UserMessage): StreamFrame {
  return { t: 'event', event: { kind: USER_MESSAGE, id: message.id, parts: message.parts } }
}

/** The person's message a frame stores, or `null` for any other frame. */
export function userMessageOf(frame: StreamFrame): UserMessage | null {
  if (frame.t !== 'event' || frame.event.kind !== USER_MESSAGE) return null
  return { id: frame.event.id, parts: frame.event.parts }
}

const refuse = (subject: string, field: string, rule: string) =>
  new InvalidAgUiInputError(describeIssues(subject, [{ field, rule }]))

/**
 * Whether a person's message says something a model can be sent: a file, or a text part that
 * is not blank. A message of no parts, or of blank text only, is no turn of a conversation
 * (providers refuse empty user content), so no door accepts it.
 */
export function saysSomething(parts: UserPart[]): boolean {
  return parts.some((part) => part.type === 'file' || part.text.trim().length > 0)
}

/**
 * Check a person's message before it is stored: at most {@link USER_MESSAGE_LIMITS}`.parts`
 * parts, text parts with a string, file parts with a media type and an `https:`, `http:` or
 * `data:` URL, something said ({@link saysSomething}: rule `required`), and the whole frame
 * within `maxFrameBytes` (the sink's cap on one frame). Returns the message as stored (only the
 * fields a part has).
 *
 * @throws InvalidAgUiInputError (400 `invalid_input`) naming the rule, never quoting the value
 */
export function checkUserMessage(
  subject: string,
  message: UserMessage,
  maxFrameBytes: number
): UserMessage {
  const field = 'message.parts'
  if (message.parts.length > USER_MESSAGE_LIMITS.parts) throw refuse(subject, field, 'maxLength')
  const parts: UserPart[] = []
  for (const part of message.parts) {
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw refuse(subject, `${field}.*.text`, 'string')
      parts.push({ type: 'text', text: part.text })
      continue
    }
    const { mediaType, url, filename } = part
    if (
      typeof mediaType !== 'string' ||
      mediaType.length > USER_MESSAGE_LIMITS.mediaTypeChars ||
      !MEDIA_TYPE.test(mediaType)
    ) {
      throw refuse(subject, `${field}.*.mediaType`, 'mediaType')
    }
    if (typeof url !== 'string' || !FILE_URL.test(url) || !URL.canParse(url)) {
      throw refuse(subject, `${field}.*.url`, 'url')
    }
    if (
      filename !== undefined &&
      (typeof filename !== 'string' || filename.length > USER_MESSAGE_LIMITS.filenameChars)
    ) {
      throw refuse(subject, `${field}.*.filename`, 'maxLength')
    }
    parts.push({ type: 'file', mediaType, url, ...(filename !== undefined ? { filename } : {}) })
  }
  if (!saysSomething(parts)) throw refuse(subject, field, 'required')
  const checked = { id: message.id, parts }
  if (Buffer.byteLength(JSON.stringify(userMessageFrame(checked))) > maxFrameBytes) {
    throw refuse(subject, field, 'maxBytes')
  }
  return checked
}

/**
 * A part of what a person said as a reader is shown it (the admin console, `agent-stream:inspect`):
 * a text part's text, a file by its name and media type. A file's URL is never shown: a `data:`
 * URL is the file's bytes, any other one the person's link.
 */
export type ShownPart =
  { type: 'text'; text: string } | { type: 'file'; mediaType: string; filename: string | null }

/** What a person said as a reader is shown it: the message's id and its parts, in order. */
export interface ShownUserMessage {
  id: string
  parts: ShownPart[]
}

/**
 * The person's message a frame stores, as readers are shown it (see {@link ShownPart}), or
 * `null` for any other frame. The one reading of the reserved kind for people (the doors never
 * send it: `core/projection.ts` drops it). Parts of no known shape are left out.
 */
export function shownUserMessage(frame: StreamFrame): ShownUserMessage | null {
  const said = userMessageOf(frame)
  if (!said) return null
  const parts: ShownPart[] = []
  for (const part of Array.isArray(said.parts) ? said.parts : []) {
    if (part?.type === 'text' && typeof part.text === 'string') {
      parts.push({ type: 'text', text: part.text })
    } else if (part?.type === 'file') {
      parts.push({
        type: 'file',
        mediaType: String(part.mediaType ?? ''),
        filename: typeof part.filename === 'string' ? part.filename : null,
      })
    }
  }
  return { id: String(said.id ?? ''), parts }
}

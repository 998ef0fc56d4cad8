import { HumanMessage } from '@langchain/core/messages'
import type { UserPart } from '../../core/frames.js'
import type { UserMessage } from '../../core/user_message.js'
import { contextText } from '../shared/context.js'

type Block =
  { type: 'text'; text: string } | { type: 'image' | 'file'; url: string; mimeType: string }

/** A person's part as a LangChain standard content block (files by URL, images as `image`). */
const blockOf = (part: UserPart): Block =>
  part.type === 'text'
    ? { type: 'text', text: part.text }
    : {
        type: part.mediaType.startsWith('image/') ? 'image' : 'file',
        url: part.url,
        mimeType: part.mediaType,
      }

/** The client's context ({@link contextText}) as one text block, or `null` when there is none. */
function contextBlock(input: unknown): Block | null {
  const text = contextText(input)
  return text === null ? null : { type: 'text', text }
}

/**
 * The person's message of a run as a `HumanMessage`, or `null` when the run has none. Its id is
 * the run's (`runId`), never the client's: LangGraph's messages reducer REPLACES a message whose
 * id the state already has, and a client re-sends its message's id (useChat's
 * `regenerate-message`, an AG-UI client sending its transcript again in a new run), so the new
 * turn would overwrite the earlier one instead of following it; one id per run appends it, and
 * the same run started again (a crash before its first checkpoint) writes it once. It is the
 * stored `user-message` frame (text and files) when a door started the run, else the input's
 * `message` (or the input itself when it is a string). The client's context comes first in it,
 * as data.
 */
export function humanMessage(
  said: UserMessage | null,
  input: unknown,
  runId: string
): HumanMessage | null {
  const text =
    typeof input === 'string'
      ? input
      : typeof (input as { message?: unknown } | null)?.message === 'string'
        ? ((input as { message: string }).message as string)
        : ''
  const blocks: Block[] = said ? said.parts.map(blockOf) : text ? [{ type: 'text', text }] : []
  if (blocks.length === 0) return null
  const context = contextBlock(input)
  const content = context ? [context, ...blocks] : blocks
  const plain = content.every((block) => block.type === 'text')
  return new HumanMessage({
    id: runId,
    content:
      plain && content.length === 1
        ? (content[0] as { text: string }).text
        : (content as HumanMessage['content']),
  })
}

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
 * The person's message of a run as a `HumanMessage` (its id the client's), or `null` when the
 * run has none: the stored `user-message` frame (text and files) when a door started the run,
 * else the input's `message` (or the input itself when it is a string). The client's context
 * comes first in it, as data.
 */
export function humanMessage(said: UserMessage | null, input: unknown): HumanMessage | null {
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
    ...(said ? { id: said.id } : {}),
    content:
      plain && content.length === 1
        ? (content[0] as { text: string }).text
        : (content as HumanMessage['content']),
  })
}

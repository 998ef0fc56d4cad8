import type { StreamFrame, UserPart } from '../../core/frames.js'
import { userMessageOf } from '../../core/user_message.js'
import { contextText } from '../shared/context.js'

/** A message as Mastra's `agent.stream()` takes it (the AI SDK's model message shape). */
export type MastraMessage =
  { role: 'user'; content: string | UserContentPart[] } | { role: 'assistant'; content: string }

type UserContentPart =
  | { type: 'text'; text: string }
  | { type: 'file'; mediaType: string; data: string; filename?: string }

/** What the person said as a user message's content: one text as a string, else parts. */
function userContent(parts: UserPart[]): string | UserContentPart[] {
  if (parts.length === 1 && parts[0].type === 'text') return parts[0].text
  return parts.map((part) =>
    part.type === 'text'
      ? { type: 'text' as const, text: part.text }
      : {
          type: 'file' as const,
          mediaType: part.mediaType,
          data: part.url,
          ...(part.filename ? { filename: part.filename } : {}),
        }
  )
}

/**
 * The thread's earlier turns as Mastra messages (PURE): each person's message (`user-message`
 * event, text and files) and what the agent answered (its `text` frames, joined per turn). Tool
 * calls and their results of earlier turns are left out: the answer that followed them says
 * what came of them, and a provider never meets a call without its result.
 */
export function turnMessages(frames: Iterable<StreamFrame>): MastraMessage[] {
  const out: MastraMessage[] = []
  let text = ''
  const flush = () => {
    if (text) out.push({ role: 'assistant', content: text })
    text = ''
  }
  for (const frame of frames) {
    const said = userMessageOf(frame)
    if (said) {
      flush()
      out.push({ role: 'user', content: userContent(said.parts) })
    } else if (frame.t === 'text') {
      text += frame.v
    }
  }
  flush()
  return out
}

/**
 * What this run adds to the conversation, from its input (`RunContext.input`) when the door did
 * not store the person's message as a frame: a string, or `{ message }` (the newest user
 * message's text). The client's AG-UI `context` entries ride in the person's message as data
 * (one JSON object per line, `<` escaped), never as a system message.
 */
export function inputMessages(input: unknown, said: boolean): MastraMessage[] {
  const out: MastraMessage[] = []
  if (typeof input === 'string') return said ? [] : [{ role: 'user', content: input }]
  const { message } = (input ?? {}) as { message?: unknown }
  if (!said && typeof message === 'string' && message) out.push({ role: 'user', content: message })
  const context = contextText(input)
  if (context !== null) out.unshift({ role: 'user', content: context })
  return out
}

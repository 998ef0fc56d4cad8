import type { AgentInputItem, UserMessageItem } from '@openai/agents'
import type { StreamFrame, UserPart } from '../../core/frames.js'
import { userMessageOf } from '../../core/user_message.js'
import { denialReason } from './checkpoint.js'
import { contextText } from '../shared/context.js'

type UserContent = Exclude<UserMessageItem['content'], string>

/**
 * What the person said as the SDK's user message content: text as `input_text`, an image
 * (`image/*`) as `input_image` with its URL, any other file as `input_file`; one text alone as a
 * string (what `run(agent, 'text')` would send).
 */
export function userContent(parts: UserPart[]): UserMessageItem['content'] {
  if (parts.length === 1 && parts[0].type === 'text') return parts[0].text
  return parts.map((part): UserContent[number] => {
    if (part.type === 'text') return { type: 'input_text', text: part.text }
    if (part.mediaType.startsWith('image/')) return { type: 'input_image', image: part.url }
    return {
      type: 'input_file',
      file: part.url.startsWith('data:') ? part.url : { url: part.url },
      ...(part.filename ? { filename: part.filename } : {}),
    }
  })
}

/** A tool's result as the model is given it: a string as is, anything else as JSON text. */
const outputText = (output: unknown) =>
  typeof output === 'string' ? output : JSON.stringify(output ?? null)

/**
 * The SDK input items stored frames stand for (PURE): a `user-message` event is a user message,
 * consecutive `text` frames one assistant message, `tool-input-available` a `function_call`
 * (handoffs included: they are calls of the `transfer_to_*` tool), `tool-output` /
 * `tool-output-error` / `tool-output-denied` its `function_call_result` (a denial with the
 * words the model was first given). Reasoning, settlements, usage and the rest are not sent
 * again. A call that never got its result (its turn was cancelled or failed while it ran) is
 * left out, so the model never meets a call without its result.
 */
export function framesToInput(frames: Iterable<StreamFrame>): AgentInputItem[] {
  const items: AgentInputItem[] = []
  const names = new Map<string, string>()
  const answered = new Set<string>()
  let text = ''
  const flush = () => {
    if (text) {
      items.push({
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text }],
      })
    }
    text = ''
  }
  const result = (callId: string, output: string) => {
    flush()
    answered.add(callId)
    items.push({
      type: 'function_call_result',
      callId,
      name: names.get(callId) ?? callId,
      status: 'completed',
      output: { type: 'text', text: output },
    })
  }
  for (const frame of frames) {
    const said = userMessageOf(frame)
    if (said) {
      flush()
      items.push({ role: 'user', content: userContent(said.parts) })
      continue
    }
    if (frame.t === 'text') {
      text += frame.v
      continue
    }
    if (frame.t !== 'event') continue
    const event = frame.event
    switch (event.kind) {
      case 'step-start':
        flush()
        break
      case 'tool-input-available':
        flush()
        names.set(event.id, event.name)
        items.push({
          type: 'function_call',
          callId: event.id,
          name: event.name,
          status: 'completed',
          arguments: JSON.stringify(event.input ?? {}),
        })
        break
      case 'tool-output':
        result(event.id, outputText(event.output))
        break
      case 'tool-output-error':
        result(event.id, outputText(event.error))
        break
      case 'tool-output-denied':
        result(event.id, denialReason(event.status, event.reason))
        break
    }
  }
  flush()
  return items.filter(
    (item) =>
      (item as { type?: string }).type !== 'function_call' ||
      answered.has((item as { callId: string }).callId)
  )
}

/**
 * The input of a run's first segment (PURE): the thread's earlier turns (`earlier`, from
 * `ctx.conversation()`), then this run's person's message: its stored `user-message` frame
 * (from `ctx.history()`), else the run's input (a string, or the doors' `{ message }`); the
 * client's context first in that message.
 */
export function runInput(
  earlier: StreamFrame[],
  own: StreamFrame[],
  input: unknown
): AgentInputItem[] {
  const items = framesToInput(earlier)
  const said = own.map(userMessageOf).find((message) => message !== null)
  const message =
    typeof input === 'string' ? input : (input as { message?: unknown } | null)?.message
  let content: UserMessageItem['content'] | null = said
    ? userContent(said.parts)
    : typeof message === 'string' && message.length > 0
      ? message
      : null
  const context = contextText(input)
  if (context) {
    const parts: UserContent =
      content === null
        ? []
        : typeof content === 'string'
          ? [{ type: 'input_text', text: content }]
          : content
    content = [{ type: 'input_text', text: context }, ...parts]
  }
  if (content !== null) items.push({ role: 'user', content })
  return items
}

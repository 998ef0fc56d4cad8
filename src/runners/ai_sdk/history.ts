import type {
  AssistantContent,
  JSONValue,
  ModelMessage,
  ToolContent,
  ToolResultPart,
  UserContent,
} from 'ai'
import type { StreamFrame, UserPart } from '../../core/frames.js'
import { userMessageOf } from '../../core/user_message.js'
import type { SettledItem } from '../../parking/types.js'
import { denialReason } from './denial.js'
import { signedRequestOf, type SignedRequest } from './signed_approval.js'

type AssistantPart = Exclude<AssistantContent, string>[number]

/** A tool's output as the model gets it: a string as text, anything else as JSON. */
export function toolOutput(output: unknown): ToolResultPart['output'] {
  if (typeof output === 'string') return { type: 'text', value: output }
  return { type: 'json', value: (output ?? null) as JSONValue }
}

/**
 * What the person said as the model's user message content, as the AI SDK's
 * `convertToModelMessages` makes it of a UI message's parts: text as text, a file as a `file`
 * part with its URL (an image is a file part with an `image/*` media type); one text alone as a
 * string.
 */
export function userContent(parts: UserPart[]): UserContent {
  // One text: the string a run's input gave the model before (`inputMessages`), the same prompt.
  if (parts.length === 1 && parts[0].type === 'text') return parts[0].text
  return parts.map((part) =>
    part.type === 'text'
      ? { type: 'text' as const, text: part.text }
      : {
          type: 'file' as const,
          mediaType: part.mediaType,
          filename: part.filename,
          data: { type: 'url' as const, url: new URL(part.url) },
        }
  ) as UserContent
}

/**
 * The messages a run's stored frames stand for, as the AI SDK had them after each step (PURE):
 * per step an assistant message (reasoning, text, tool calls, approval requests, in order) and a
 * tool message with the step's tool results; a tool output written outside a step (a resume
 * running an approved call, a question set's answers) joins the step that asked. `text` frames
 * are the assistant's text, `reasoning` events its reasoning, `tool-input-available` its calls,
 * `tool-output` / `tool-output-error` / `tool-output-denied` their results (a denial with the
 * words the model was first given, {@link denialReason}), `approval` an approval request under
 * the call's id, `elicitation` the call of the asking tool (`options.askTool`, its name) with
 * the question set as input (a signed request, stored before its `approval` frame, gives the
 * request the SDK's own approval id and signature), a `user-message` event (what the person said) a user message
 * ({@link userContent}). Everything else (settlements, errors, usage, sources) is not the model's to see.
 */
export function framesToMessages(
  frames: Iterable<StreamFrame>,
  options: { askTool?: string } = {}
): ModelMessage[] {
  const messages: ModelMessage[] = []
  let assistant: AssistantPart[] = []
  let results: ToolContent = []
  const names = new Map<string, string>()
  const signed = new Map<string, SignedRequest>()
  const flush = () => {
    if (assistant.length > 0) messages.push({ role: 'assistant', content: assistant })
    if (results.length > 0) messages.push({ role: 'tool', content: results })
    assistant = []
    results = []
  }
  const result = (id: string, output: ToolResultPart['output']) =>
    results.push({ type: 'tool-result', toolCallId: id, toolName: names.get(id) ?? id, output })
  for (const frame of frames) {
    const said = userMessageOf(frame)
    if (said) {
      flush()
      messages.push({ role: 'user', content: userContent(said.parts) })
      continue
    }
    if (frame.t === 'text') {
      const last = assistant.at(-1)
      if (last?.type === 'text') last.text += frame.v
      else assistant.push({ type: 'text', text: frame.v })
      continue
    }
    if (frame.t === 'elicitation' && options.askTool) {
      // A question set the model asked through the asking tool: its call, input as it was sent.
      const { preamble, questions } = frame.request
      names.set(frame.id, options.askTool)
      assistant.push({
        type: 'tool-call',
        toolCallId: frame.id,
        toolName: options.askTool,
        input: { ...(preamble ? { preamble } : {}), questions },
      })
      continue
    }
    if (frame.t === 'approval') {
      const request = signed.get(frame.id)
      signed.delete(frame.id)
      assistant.push({
        type: 'tool-approval-request',
        approvalId: request?.approvalId ?? frame.id,
        toolCallId: frame.id,
        ...(request ? { signature: request.signature } : {}),
      })
      continue
    }
    const request = signedRequestOf(frame)
    if (request) {
      signed.set(request.id, request)
      continue
    }
    if (frame.t !== 'event') continue
    const event = frame.event
    switch (event.kind) {
      case 'step-start':
        // A new model call: what came before was one step (its results followed its calls).
        flush()
        break
      case 'reasoning': {
        const last = assistant.at(-1)
        if (last?.type === 'reasoning') last.text += event.text
        else assistant.push({ type: 'reasoning', text: event.text })
        break
      }
      case 'tool-input-available':
        names.set(event.id, event.name)
        assistant.push({
          type: 'tool-call',
          toolCallId: event.id,
          toolName: event.name,
          input: event.input ?? {},
        })
        break
      case 'tool-output':
        result(event.id, toolOutput(event.output))
        break
      case 'tool-output-error':
        result(event.id, {
          type: 'error-text',
          value: typeof event.error === 'string' ? event.error : JSON.stringify(event.error),
        })
        break
      case 'tool-output-denied':
        result(event.id, {
          type: 'execution-denied',
          reason: denialReason(event.status, event.reason),
        })
        break
    }
  }
  flush()
  return messages
}

/**
 * The conversation a resume continues from (PURE): the rebuilt messages, each approved call's
 * input replaced by the approved one (a person's edit wins), then the approval responses as
 * the AI SDK expects them in the last tool message: approved calls run (by the SDK, with that
 * input), denied ones become `execution-denied` results with {@link denialReason}; each names
 * its request's approval id (the SDK's own for a signed request, which it verifies). Question
 * sets need nothing here: their answers are stored as the call's `tool-output`.
 */
export function resumeMessages(messages: ModelMessage[], items: SettledItem[]): ModelMessage[] {
  const approvals = items.filter((item) => item.kind === 'approval')
  if (approvals.length === 0) return messages
  const byId = new Map(approvals.map((item) => [item.id, item]))
  // The approval id of each call's latest request (the SDK's own, when it signed it).
  const approvalIds = new Map<string, string>()
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue
    for (const part of message.content) {
      if (part.type === 'tool-approval-request') approvalIds.set(part.toolCallId, part.approvalId)
    }
  }
  const out: ModelMessage[] = messages.map((message) => {
    if (message.role !== 'assistant' || typeof message.content === 'string') return message
    return {
      ...message,
      content: message.content.map((part) => {
        const item = part.type === 'tool-call' ? byId.get(part.toolCallId) : undefined
        return item?.status === 'approved' && item.input !== undefined
          ? { ...part, input: item.input }
          : part
      }),
    }
  })
  const responses: ToolContent = approvals.map((item) => ({
    type: 'tool-approval-response',
    approvalId: approvalIds.get(item.id) ?? item.id,
    approved: item.status === 'approved',
    ...(item.status === 'approved' ? {} : { reason: denialReason(item.status, item.reason) }),
  }))
  const last = out.at(-1)
  if (last?.role === 'tool') {
    out[out.length - 1] = { ...last, content: [...last.content, ...responses] }
  } else {
    out.push({ role: 'tool', content: responses })
  }
  return out
}

/**
 * Earlier turns as the model may be sent them (PURE): a tool call that never got its result
 * (its turn was cancelled or failed while it ran) is left out, and so are approval requests
 * (the call's result says how it was decided), as `convertToModelMessages`'s
 * `ignoreIncompleteToolCalls` does, so a provider never meets a call without its result.
 */
export function completedCalls(messages: ModelMessage[]): ModelMessage[] {
  const answered = new Set<string>()
  for (const message of messages) {
    if (message.role !== 'tool') continue
    for (const part of message.content) {
      if (part.type === 'tool-result') answered.add(part.toolCallId)
    }
  }
  const out: ModelMessage[] = []
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') {
      out.push(message)
      continue
    }
    // An approval request of a turn that is over is answered by its call's result (approved and
    // run, or `execution-denied`): only that result is the model's.
    const content = message.content.filter(
      (part) =>
        part.type !== 'tool-approval-request' &&
        (part.type !== 'tool-call' || answered.has(part.toolCallId))
    )
    if (content.length > 0) out.push({ ...message, content })
  }
  return out
}

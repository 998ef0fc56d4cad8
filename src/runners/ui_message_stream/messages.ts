import type { UIMessage } from 'ai'
import type { StreamFrame } from '../../core/frames.js'
import { userMessageOf } from '../../core/user_message.js'
import type { AskedApproval } from './chunks.js'

type Part = UIMessage['parts'][number]
type ToolPart = Extract<Part, { toolCallId: string }> & Record<string, any>

/** The fixed sentence a denied call's part carries when no reason was given, per status. */
export const NOT_RUN_SENTENCES = {
  rejected: 'A person rejected this tool call; it did not run.',
  expired: 'Nobody approved this tool call in time; it did not run.',
  cancelled: 'The run was cancelled before this tool call ran.',
} as const

/** How a call a resume decides is handed back: the approval as asked, the decision, the input. */
export interface Responded {
  approval: AskedApproval
  approved: boolean
  reason?: string
  input?: unknown
}

/**
 * The UI messages a thread's stored frames stand for (PURE), as `useChat` holds them: a
 * `user-message` event is a user message (its text and file parts); what the agent wrote after
 * it, one assistant message: `step-start` parts, `text` and `reasoning` parts (`done`), one
 * `tool-<name>` part per call whose state follows its frames (`input-available`, then
 * `approval-requested` on its `approval`, `output-available` / `output-error` /
 * `output-denied` on its result). `responded` (a resume's decisions, by call id) puts a call in
 * `approval-responded` with its `approval` `{ id, approved, reason }` and the approved input,
 * whatever the frames stored for it since, so a producer built on `streamText` and
 * `convertToModelMessages` continues as `useChat` would drive it. `approvals` gives the ids
 * the producer used for calls asked earlier. Ids: the person's own, else `prefix` and a position.
 */
export function framesToUiMessages(
  frames: Iterable<StreamFrame>,
  prefix: string,
  approvals: Map<string, AskedApproval> = new Map(),
  responded: Map<string, Responded> = new Map()
): UIMessage[] {
  const messages: UIMessage[] = []
  let assistant: UIMessage | null = null
  const calls = new Map<string, ToolPart>()
  const open = (): UIMessage => {
    if (!assistant) {
      assistant = { id: `${prefix}-${messages.length}`, role: 'assistant', parts: [] }
      messages.push(assistant)
    }
    return assistant
  }
  const approvalOf = (id: string) => approvals.get(id) ?? { id }
  const settle = (id: string, fields: Record<string, unknown>) => {
    const part = calls.get(id)
    if (!part || responded.has(id)) return
    for (const key of ['output', 'errorText']) delete part[key]
    Object.assign(part, fields)
  }
  for (const frame of frames) {
    const said = userMessageOf(frame)
    if (said) {
      assistant = null
      messages.push({
        id: said.id || `${prefix}-${messages.length}`,
        role: 'user',
        parts: said.parts.map((part) =>
          part.type === 'text'
            ? { type: 'text', text: part.text }
            : {
                type: 'file',
                mediaType: part.mediaType,
                url: part.url,
                ...(part.filename ? { filename: part.filename } : {}),
              }
        ),
      })
      continue
    }
    if (frame.t === 'text') {
      const parts = open().parts
      const last = parts.at(-1)
      if (last?.type === 'text') last.text += frame.v
      else parts.push({ type: 'text', text: frame.v, state: 'done' })
      continue
    }
    if (frame.t === 'approval') {
      settle(frame.id, { state: 'approval-requested', approval: approvalOf(frame.id) })
      continue
    }
    if (frame.t !== 'event') continue
    const event = frame.event
    switch (event.kind) {
      case 'step-start':
        open().parts.push({ type: 'step-start' })
        break
      case 'reasoning':
        open().parts.push({ type: 'reasoning', text: event.text, state: 'done' })
        break
      case 'tool-input-available': {
        if (calls.has(event.id)) break
        const part = {
          type: `tool-${event.name}`,
          toolCallId: event.id,
          state: 'input-available',
          input: event.input ?? {},
        } as ToolPart
        calls.set(event.id, part)
        open().parts.push(part)
        break
      }
      case 'tool-output':
        settle(event.id, { state: 'output-available', output: event.output ?? null })
        break
      case 'tool-output-error':
        settle(event.id, {
          state: 'output-error',
          errorText: typeof event.error === 'string' ? event.error : JSON.stringify(event.error),
        })
        break
      case 'tool-output-denied':
        settle(event.id, {
          state: 'output-denied',
          approval: {
            id: approvalOf(event.id).id,
            approved: false,
            reason:
              event.reason && event.status === 'rejected'
                ? event.reason
                : NOT_RUN_SENTENCES[event.status ?? 'rejected'],
          },
        })
        break
    }
  }
  for (const [id, decision] of responded) {
    const part = calls.get(id)
    if (!part) continue
    for (const key of ['output', 'errorText']) delete part[key]
    Object.assign(part, {
      state: 'approval-responded',
      ...(decision.input !== undefined ? { input: decision.input } : {}),
      approval: {
        ...decision.approval,
        approved: decision.approved,
        ...(decision.reason ? { reason: decision.reason } : {}),
      },
    })
  }
  return messages
}

import { EventType } from '@ag-ui/core'
import type { AgUiReply, SseItem } from './reply.js'

/**
 * The stable codes of refusals sent as `RUN_ERROR` once the stream is open (AG-UI interrupts
 * rules 1-8). A refused input changes no row. (A refusal before the stream opens is the
 * kernel's: `src/door/refusals.ts`.)
 */
export type AgUiRefusalCode =
  | 'interrupt_pending'
  | 'no_pending_interrupt'
  | 'unknown_interrupt'
  | 'duplicate_interrupt'
  | 'incomplete_resume'
  | 'invalid_resume_payload'
  | 'interrupt_expired'
  | 'not_allowed'
  | 'run_id_used'
  | 'run_active'
  | 'decision_conflict'
  | 'interrupt_decided'
  | 'interrupt_cancelled'
  | 'unknown_tool_call'

/** The fixed sentence of each refusal, keyed by its code. */
export const REFUSALS: Record<AgUiRefusalCode, string> = {
  interrupt_pending: 'This thread is waiting for answers: resume it with every open interrupt.',
  no_pending_interrupt: 'This thread has no open interrupt to resume.',
  unknown_interrupt: 'A resume entry names an interrupt this thread does not have open.',
  duplicate_interrupt: 'A resume entry names the same interrupt twice.',
  incomplete_resume: 'A resume must answer every open interrupt of the thread.',
  invalid_resume_payload: "A resume payload does not match its interrupt's responseSchema.",
  interrupt_expired: 'An interrupt expired: it can only be cancelled.',
  not_allowed: 'You may not answer one of these interrupts.',
  run_id_used: 'This run id is already used.',
  run_active: 'The run is still writing: resume once it has finished.',
  decision_conflict: 'Someone else answered these interrupts first.',
  unknown_tool_call: 'A tool message answers no call this thread is waiting for.',
  interrupt_decided:
    'These interrupts were answered elsewhere: attach to the thread to follow the run.',
  interrupt_cancelled: 'The run was cancelled: its interrupts can no longer be answered.',
}

/** The refusal a decision error lost to a race maps to, by the error's code (not its status). */
const BY_ERROR: Record<string, AgUiRefusalCode> = {
  E_DECISION_CONFLICT: 'decision_conflict',
  E_DECISION_LAPSED: 'interrupt_expired',
  E_DECISION_FORBIDDEN: 'not_allowed',
  E_DECISION_MISMATCH: 'invalid_resume_payload',
  E_INVALID_DECISION: 'invalid_resume_payload',
  E_PARKED_NOT_FOUND: 'unknown_interrupt',
}

/** The AG-UI refusal for one of parking's decision errors, or `null` for any other error. */
export function refusalOf(error: unknown): AgUiRefusalCode | null {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && Object.hasOwn(BY_ERROR, code) ? BY_ERROR[code] : null
}

/**
 * The field and rule a decision error of parking names (`E_INVALID_DECISION`), as the resume
 * payload spells the field (an approval's edited `input` is its `editedArgs`), never the value;
 * `undefined` for any other error.
 */
export function issueOf(error: unknown): string | undefined {
  if ((error as { code?: unknown } | null)?.code !== 'E_INVALID_DECISION') return undefined
  const [issue] = (error as { issues?: { field: string; rule: string }[] }).issues ?? []
  if (!issue) return undefined
  const field = issue.field.replace(/^input(?=\/|$)/, 'editedArgs')
  return `"${field || '(payload)'}" fails the "${issue.rule}" rule`
}

/**
 * A refusal once the stream is open: one `RUN_ERROR` with a stable code, nothing else; its
 * message is the code's fixed sentence, with `detail` (the field and rule broken, {@link
 * issueOf}) when there is one.
 */
export function refusal(code: AgUiRefusalCode, detail?: string): AgUiReply {
  const message = detail ? `${REFUSALS[code].replace(/\.$/, '')}: ${detail}.` : REFUSALS[code]
  async function* events(): AsyncGenerator<SseItem> {
    yield { event: { type: EventType.RUN_ERROR, code, message } }
  }
  return { kind: 'stream', events: events() }
}

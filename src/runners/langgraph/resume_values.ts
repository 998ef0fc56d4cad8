import type { SettledItem } from '../../parking/types.js'
import type { ParkedInterrupt, ToolDecision } from './interrupts.js'

/** The sentences a tool call's rejection hands the graph when the person gave no reason. */
export const REJECTION_MESSAGES = {
  rejected: 'A person rejected this tool call: it did not run.',
  expired: 'Nobody decided this tool call in time: it did not run.',
  cancelled: 'The run was cancelled before this tool call was decided: it did not run.',
  stopped: 'The run stopped before this tool call returned: its result is unknown.',
} as const

/** A tool call's decision from its settled approval (an edited input is an `edit`). */
function decisionOf(item: SettledItem | undefined, parked: ParkedInterrupt): ToolDecision {
  if (!item || item.status !== 'approved') {
    const status = item?.status === 'expired' || item?.status === 'cancelled' ? item.status : null
    return {
      type: 'reject',
      message: item?.reason || REJECTION_MESSAGES[status ?? 'rejected'],
    }
  }
  const edited =
    item.input !== undefined && JSON.stringify(item.input) !== JSON.stringify(parked.input ?? {})
  if (!edited) return { type: 'approve' }
  return {
    type: 'edit',
    editedAction: { name: parked.name ?? '', args: item.input as Record<string, unknown> },
  }
}

/**
 * Whether the request a parked item answers does not allow its decision: a HITL review's
 * `allowedDecisions` without it (LangChain's middleware throws on it), an edit of an Agent Inbox
 * request without `allow_edit`. The approval frame refuses an edit such a request does not allow
 * (`inputSchema: false`); a rejection it does not allow is a person's to make all the same.
 */
function notAllowed(decision: ToolDecision, parked: ParkedInterrupt): boolean {
  if (parked.as === 'hitl') return !!parked.allowed && !parked.allowed.includes(decision.type)
  if (parked.as === 'inbox') return decision.type === 'edit' && !parked.allowed?.includes('edit')
  return false
}

/**
 * The parked tool calls whose request does not allow the decision they got ({@link notAllowed}):
 * the graph cannot be resumed with it (the run ends; nothing runs), PURE.
 */
export function refusedDecisions(
  parked: Record<string, ParkedInterrupt>,
  items: SettledItem[]
): string[] {
  const settled = new Map(items.map((item) => [item.id, item]))
  return Object.entries(parked)
    .filter(([id, entry]) => notAllowed(decisionOf(settled.get(id), entry), entry))
    .map(([id]) => id)
}

/**
 * An Agent Inbox `HumanResponse` for a decision: `accept`, `edit`, `response` with the message
 * when the request allows a response, else `ignore`.
 */
function inboxResponse(decision: ToolDecision, parked: ParkedInterrupt) {
  if (decision.type === 'approve') return { type: 'accept', args: null }
  if (decision.type === 'edit') {
    return {
      type: 'edit',
      args: { action: decision.editedAction.name, args: decision.editedAction.args },
    }
  }
  return parked.allowed?.includes('respond')
    ? { type: 'response', args: decision.message ?? REJECTION_MESSAGES.rejected }
    : { type: 'ignore', args: null }
}

/**
 * The resume value of each open interrupt, by interrupt id (`Command({ resume: { [id]: value } })`),
 * from the settled items (PURE): a tool call's {@link ToolDecision}; a HITL request's
 * `{ decisions }` in its actions' order; a question set's `{ answers, skipped }`; a one-question
 * interrupt's answer (the text, `true`/`false`, the option's value), `null` when skipped.
 */
export function resumeValues(
  parked: Record<string, ParkedInterrupt>,
  items: SettledItem[]
): Record<string, unknown> {
  const settled = new Map(items.map((item) => [item.id, item]))
  const out: Record<string, unknown> = {}
  const hitl = new Map<string, ToolDecision[]>()
  const inbox = new Map<string, { list: boolean; responses: unknown[] }>()
  for (const [itemId, entry] of Object.entries(parked)) {
    const item = settled.get(itemId)
    switch (entry.as) {
      case 'tool':
        out[entry.interrupt] = decisionOf(item, entry)
        break
      case 'hitl': {
        const decisions = hitl.get(entry.interrupt) ?? new Array(entry.count ?? 1)
        decisions[entry.index ?? 0] = decisionOf(item, entry)
        hitl.set(entry.interrupt, decisions)
        break
      }
      case 'inbox': {
        const one = inbox.get(entry.interrupt) ?? { list: !!entry.list, responses: [] }
        one.responses[entry.index ?? 0] = inboxResponse(decisionOf(item, entry), entry)
        inbox.set(entry.interrupt, one)
        break
      }
      case 'questions':
        out[entry.interrupt] = {
          answers: item?.skipped ? {} : (item?.answers ?? {}),
          skipped: item?.skipped ?? item?.status !== 'answered',
        }
        break
      default: {
        const value =
          item?.status === 'answered' && !item.skipped ? item.answers?.answer?.[0] : undefined
        out[entry.interrupt] =
          value === undefined ? null : entry.as === 'boolean' ? value === 'yes' : value
      }
    }
  }
  for (const [id, { list, responses }] of inbox) {
    const all = Array.from(responses, (r) => r ?? { type: 'ignore', args: null })
    out[id] = list ? all : all[0]
  }
  for (const [id, decisions] of hitl) {
    out[id] = { decisions: Array.from(decisions, (d) => d ?? { type: 'reject' }) }
  }
  return out
}

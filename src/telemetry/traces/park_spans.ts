import { context, isSpanContextValid, SpanKind, trace, type Link } from '@opentelemetry/api'
import { tracer } from '../otel.js'
import { ATTR } from './attributes.js'
import { contextOf } from './carrier.js'

/** A settled park item, as its span reports it (no input, no answer, no person). */
export interface DecidedItem {
  kind: 'approval' | 'elicitation'
  runId: string
  streamRunId: string
  threadId: string
  park: number
  itemId: string
  toolName?: string
  /** The approver: a role, or `requester` (never a person's id). */
  approver: string
  /** approved, rejected, answered, expired, cancelled. */
  decision: string
  /** chat, admin, api, expiry, cancel. */
  via: string
  /** When it was asked and decided (epoch ms, the database's clock, from its row). */
  askedAt: number
  decidedAt: number
}

/**
 * The span of one park item (`await_human <tool>`, `await_human question_set` for a question
 * set), made when its decision has landed: started at the ask's time (`startTime`), ended at the
 * decision's, so no span is held open while a person takes hours. A child of the run's stored
 * root context (`carrier`), linked to the span active when the decision landed (the deciding
 * request's); nothing when the run has none (no tracer recorded its start).
 */
export function recordDecidedItems(carrier: string | null, items: DecidedItem[]) {
  const parent = contextOf(carrier)
  if (!parent) return
  // The request that decided (the active span, if any) is linked: its own trace is another.
  const decidedIn = trace.getSpanContext(context.active())
  const links: Link[] = decidedIn && isSpanContextValid(decidedIn) ? [{ context: decidedIn }] : []
  for (const item of items) {
    const name = item.kind === 'approval' ? (item.toolName ?? 'tool') : 'question_set'
    const span = tracer().startSpan(
      `await_human ${name}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: item.askedAt,
        links,
        attributes: {
          [ATTR.operationName]: 'await_human',
          [ATTR.conversationId]: item.threadId,
          [ATTR.runId]: item.runId,
          [ATTR.streamRunId]: item.streamRunId,
          [ATTR.park]: item.park,
          [ATTR.itemKind]: item.kind,
          [ATTR.toolCallId]: item.itemId,
          ...(item.kind === 'approval' && item.toolName ? { [ATTR.toolName]: item.toolName } : {}),
          [ATTR.decision]: item.decision,
          [ATTR.decidedVia]: item.via,
          [ATTR.approver]: item.approver,
        },
      },
      parent
    )
    span.end(Math.max(item.decidedAt, item.askedAt))
  }
}

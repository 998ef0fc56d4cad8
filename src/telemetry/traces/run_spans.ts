import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api'
import { tracer } from '../otel.js'
import { ATTR } from './attributes.js'
import { carrierOf, contextOf } from './carrier.js'

/** What a run's span is about (a run's meta, less what never goes into a span by default). */
export interface TracedRun {
  runId: string
  streamRunId: string
  threadId: string
  /** The principal's id: on the root span as `enduser.id` only with `enduserId`. */
  principalId?: string | null
}

/**
 * How a segment ended (a `RunOutcome`'s status and code), or `refused`: a start refused before
 * anything ran (its `code` says why; not an error).
 */
export interface TracedOutcome {
  status: 'finished' | 'parked' | 'cancelled' | 'failed' | 'refused'
  code?: string
}

/** One segment's span: the context to run it in, and its end. */
export interface SegmentSpan {
  /** The context the segment runs in (its span active): spans made inside are its children. */
  readonly context: Context
  /** The stored form of the span's context (the root's: kept with the run), or `null`. */
  readonly carrier: string | null
  /** Whether the span records (an SDK is registered and sampled it in). */
  readonly recording: boolean
  /** Set `agent_stream.segment` (a later segment's number, once read). */
  segment(n: number): void
  /** End the span with the segment's outcome (once; later calls do nothing). */
  end(outcome: TracedOutcome): void
}

function attributes(agent: string, run: TracedRun) {
  return {
    [ATTR.operationName]: 'invoke_agent',
    [ATTR.agentName]: agent,
    [ATTR.conversationId]: run.threadId,
    [ATTR.runId]: run.runId,
    [ATTR.streamRunId]: run.streamRunId,
  }
}

function segmentSpan(span: Span, parent: Context): SegmentSpan {
  let ended = false
  return {
    context: trace.setSpan(parent, span),
    carrier: carrierOf(span),
    recording: span.isRecording(),
    segment: (n) => span.setAttribute(ATTR.segment, n),
    end(outcome) {
      if (ended) return
      ended = true
      span.setAttribute(ATTR.outcome, outcome.status)
      if (outcome.status === 'failed') {
        span.setAttribute(ATTR.errorType, outcome.code ?? 'run_failed')
        span.setStatus({ code: SpanStatusCode.ERROR })
      }
      // Refused (the run id, the thread or the turn was taken): why, and no error (nothing ran).
      if (outcome.status === 'refused' && outcome.code)
        span.setAttribute(ATTR.refused, outcome.code)
      span.end()
    },
  }
}

/**
 * The root span of a run (`invoke_agent <agent>`, segment 1), a child of the active context (the
 * HTTP request's span that started the run, under `@adonisjs/otel`). It ends when the first
 * segment ends (finished or parked), so it exports; later segments are its children
 * ({@link laterSegmentSpan}) through the carrier stored with the run.
 */
export function rootRunSpan(agent: string, run: TracedRun, enduserId = false): SegmentSpan {
  const parent = context.active()
  const span = tracer().startSpan(
    `invoke_agent ${agent}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        ...attributes(agent, run),
        [ATTR.segment]: 1,
        ...(enduserId && run.principalId ? { [ATTR.enduserId]: run.principalId } : {}),
      },
    },
    parent
  )
  return segmentSpan(span, parent)
}

/**
 * A later segment of a run (a resume, or a dead writer's segment continued: `continued`), on
 * whichever replica runs it: `invoke_agent <agent>`, a child of the run's stored root context
 * (`carrier`); its number is set once read ({@link SegmentSpan.segment}). Without a carrier
 * (the run started with no tracer recording) it is a root of its own.
 */
export function laterSegmentSpan(
  agent: string,
  run: TracedRun,
  carrier: string | null,
  continued = false
): SegmentSpan {
  // No carrier: a root of its own, never a child of what is active here (the deciding
  // request's span, or another run's segment that claimed this one).
  const parent = contextOf(carrier) ?? ROOT_CONTEXT
  const span = tracer().startSpan(
    `invoke_agent ${agent}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        ...attributes(agent, run),
        ...(continued ? { [ATTR.continued]: true } : {}),
      },
    },
    parent
  )
  return segmentSpan(span, parent)
}

import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { context } from '@opentelemetry/api'
import type { RunMeta } from '../core/run.js'
import type { TraceContexts } from '../store/trace_contexts.js'
import { ThreadTakenError, TurnTakenError } from '../store/door_runs.js'
import { StreamExistsError } from '../store/stream_store.js'
import {
  agentNameOf,
  errorType,
  laterSegmentSpan,
  rootRunSpan,
  type SegmentSpan,
  type TraceOptions,
  type TracedRun,
  tracing,
} from '../telemetry/traces/index.js'
import type { RunOutcome } from './contract.js'

/** A segment's span as the driver uses it: the open's extra write, and the run inside it. */
export interface SegmentTrace {
  /** `within` of the stream's open, with the run's carrier stored in the same transaction. */
  within(
    own?: (trx: TransactionClientContract) => Promise<void>
  ): ((trx: TransactionClientContract) => Promise<void>) | undefined
  /** Run the segment inside the span's context; the span ends with its outcome. */
  run(segment: () => Promise<RunOutcome>): Promise<RunOutcome>
  /**
   * The open did not happen: a refusal (the run id, the thread or the turn taken: a client's
   * repeated POST, a race lost) ends the span `refused`, not an error; anything else `failed`
   * with the error's stable code (never its text).
   */
  fail(error: unknown): void
}

/** The stable name of a start refused before it ran (nothing was opened), else `null`. */
function refusalOf(error: unknown): string | null {
  if (error instanceof StreamExistsError) return 'stream_exists'
  if (error instanceof ThreadTakenError) return 'thread_taken'
  if (error instanceof TurnTakenError) return 'turn_taken'
  return null
}

const traced = (meta: RunMeta): TracedRun => ({
  runId: meta.runId,
  streamRunId: meta.streamRunId,
  threadId: meta.threadId,
  principalId: meta.principal?.id ?? null,
})

function segmentTrace(
  span: SegmentSpan,
  save?: (trx: TransactionClientContract) => Promise<void>
): SegmentTrace {
  return {
    within: (own) =>
      save
        ? async (trx) => {
            await own?.(trx)
            await save(trx)
          }
        : own,
    run: (segment) =>
      context.with(span.context, segment).then(
        (outcome) => {
          span.end(outcome)
          return outcome
        },
        (error) => {
          span.end({ status: 'failed' })
          throw error
        }
      ),
    fail: (error) => {
      const refused = refusalOf(error)
      span.end(
        refused
          ? { status: 'refused', code: refused }
          : { status: 'failed', code: errorType(error) }
      )
    },
  }
}

/**
 * The driver's spans of a run (docs/observability.md): the root `invoke_agent` span of its first
 * segment, its W3C context stored with the stream's open (`TraceContexts`), and each later
 * segment a child of that stored context, on whichever replica runs it. Tracing never fails a
 * run: a carrier that cannot be read gives a span of its own trace.
 */
export class RunTraces {
  readonly agentName: string

  constructor(
    readonly contexts: TraceContexts,
    readonly options: TraceOptions & { runnerName?: string } = {}
  ) {
    this.agentName = agentNameOf(options, options.runnerName)
  }

  /** The first segment of a run started now (in the request's context). */
  first(meta: RunMeta): SegmentTrace {
    const span = rootRunSpan(this.agentName, traced(meta), this.options.enduserId === true)
    const carrier = span.carrier
    return segmentTrace(
      span,
      carrier ? (trx) => this.contexts.save(trx, meta.streamRunId, carrier) : undefined
    )
  }

  /**
   * A later segment (a resume; `continued`: a dead writer's segment carried on), once its
   * stream is open here: its number counts the segment ends stored before it.
   */
  async later(meta: RunMeta, continued = false): Promise<SegmentTrace> {
    const id = meta.streamRunId
    // No SDK: the span is a no-op, and its parent is not read.
    const carrier = tracing() ? await this.contexts.carrier(id).catch(() => null) : null
    const span = laterSegmentSpan(this.agentName, traced(meta), carrier, continued)
    // Its number costs a read: only for a span that records.
    if (span.recording) {
      const segment = await this.contexts.segment(id).catch(() => null)
      if (segment !== null) span.segment(segment)
    }
    return segmentTrace(span)
  }
}

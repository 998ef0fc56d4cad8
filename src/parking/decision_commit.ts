import { DecisionConflictError, DecisionLapsedError } from '../errors.js'
import type { AgentState } from '../core/agent_state.js'
import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { nowMs } from '../store/clock.js'
import { recordParksSettled } from '../telemetry/metrics/index.js'
import type { Step } from './decision_steps.js'
import { traceSettled } from './decision_traces.js'
import { decisionEvent } from './lifecycle_events.js'
import type { ParkingStore } from './parking_store.js'
import { lapsed } from './policy.js'
import type { ReadyNotices } from './ready.js'
import { settlementFrames } from './settlement_frames.js'

/** What applying checked decisions writes through and tells. */
export interface CommitDeps {
  /** Settlement frames are appended through it, in the decisions' transaction. */
  sink: LucidTokenStreamSink
  store: Pick<ParkingStore, 'rows' | 'settling'>
  /** Told when the decisions leave a segment with nothing pending. */
  ready: ReadyNotices
  /** Background failures (a ready notice's, a trace's), which never undo a decision. */
  onError?: (error: unknown) => void
}

/**
 * Settle every step in ONE transaction of their stream, with every settlement's frames (a
 * decision and its frames commit together or not at all; several decisions too), and the page's
 * state sent with them for the resumed segment. Then, once nothing of the segment is pending,
 * the ready notice.
 * @throws DecisionLapsedError, DecisionConflictError (a race lost: nothing applied)
 */
export async function commitSteps(deps: CommitDeps, steps: Step[], pageState?: AgentState) {
  if (steps.length === 0) return
  const { sink, store } = deps
  const frames = steps.flatMap((step) =>
    settlementFrames(
      step.item,
      { principal: step.decider.principal, via: step.decider.via ?? 'api' },
      step.outcome
    )
  )
  const { streamRunId } = steps[0].item
  const lifecycle = sinkInternals(sink).lifecycle
  // Settlement frames obey the same rules and size cap as any other frame (the sink validates).
  await sink.append(streamRunId, {
    frames,
    evenIfClosed: true,
    within: async (trx) => {
      for (const { item, decider, outcome } of steps) {
        const won = await store.settling.settle(trx, item, {
          status: outcome.status,
          decidedBy: decider.principal?.id ?? null,
          decidedVia: decider.via ?? 'api',
          reason: outcome.reason ?? null,
          editedInput: outcome.editedInput,
          reply: outcome.reply,
        })
        // Still pending means it lapsed meanwhile; otherwise someone decided first. Thrown,
        // the whole transaction rolls back: none of the batch is applied.
        if (!won) throw lapsed(item) ? new DecisionLapsedError() : new DecisionConflictError()
        await lifecycle.record(trx, decisionEvent(item, decider, outcome.status))
      }
      if (pageState) await store.settling.carryPageState(trx, streamRunId, pageState)
    },
  })
  recordParksSettled(steps.map(settledPark), nowMs())
  const last = steps[steps.length - 1].item
  try {
    // Ready once nothing of its segment is pending (several runs may have parked in it): a
    // listener (the run driver) claims it. Of two last decisions racing, the later commit sees
    // zero, so at least one emits; the claim rechecks.
    const { rows, settling } = store
    if ((await settling.pendingInStream(rows.client, streamRunId)) === 0) {
      await deps.ready.emit({ runId: last.runId, park: last.park })
    }
  } catch (error) {
    // The decision stands; the sweeper claims the suspension later.
    deps.onError?.(error)
  }
  const settled = steps.map((step) => step.item)
  await traceSettled(store.rows, streamRunId, settled, deps.onError)
}

/** What the park duration metric is told of a settled step. */
function settledPark(step: Step) {
  const { item, outcome, decider } = step
  return { askedAt: item.createdAt, decision: outcome.status, via: decider.via ?? 'api' }
}

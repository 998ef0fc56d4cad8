import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { DecisionConflictError, ParkedItemNotFoundError } from '../errors.js'
import type { Principal } from '../core/run.js'
import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { ParkingStore } from './parking_store.js'
import type { ParkingQueries } from './queries.js'
import type { ItemRow } from './store_rows.js'
import { cancelFrames, deniedCalls } from './settlement_frames.js'
import { refusal, seesItem, type Decider } from './policy.js'
import { nowMs } from '../store/clock.js'
import { recordParksCancelled } from '../telemetry/metrics/index.js'

/** What a cancel reads and writes through (parking's decisions give theirs). */
export interface CancelDeps {
  sink: LucidTokenStreamSink
  store: Pick<ParkingStore, 'reads' | 'settling'>
  queries: ParkingQueries
  mayDecide: (
    principal: Principal | null,
    item: Pick<ItemRow, 'approver' | 'principal' | 'kind' | 'runId'>
  ) => Promise<boolean>
}

/**
 * One attempt at cancelling the segment `runId` parked on (`ParkingDecisions.cancel`, which
 * tries again on `'changed'`: a decision committed between the read and the cancel's commit).
 * @throws ParkedItemNotFoundError, DecisionForbiddenError, DecisionConflictError
 */
export async function cancelOnce(
  deps: CancelDeps,
  runId: string,
  decider: Decider,
  alsoWithin?: (trx: TransactionClientContract) => Promise<void>
) {
  const own = await deps.store.reads.latestSuspension(runId)
  const streamRunId = own?.streamRunId ?? runId
  const live = await deps.store.reads.liveInStream(streamRunId)
  if (live.length === 0) {
    // Nothing parked: a conflict, told only to whoever may see the run (else the 404 of a
    // missing one: a 409 would say that another person's run exists).
    const newest = own ?? (await deps.queries.newestInStream(streamRunId))
    const parked = newest && (own ?? (await deps.store.reads.latestSuspension(newest.runId)))
    if (parked && seesItem(decider, parked.principal)) throw new DecisionConflictError()
    throw new ParkedItemNotFoundError()
  }
  // All of them, however many (never a page).
  const items = await deps.store.reads.segmentItems(streamRunId)
  const pending = items.filter((item) => item.status === 'pending')
  const may = async (approver: string) =>
    decider.principal !== null &&
    (await deps.mayDecide(decider.principal, {
      approver,
      principal: live[0].principal,
      kind: 'approval',
      runId: live[0].runId,
    }))
  // The person the run is for, or anyone who may decide one of its pending items.
  let allowed = await may('requester')
  for (const approver of new Set(pending.map((item) => item.approver))) {
    allowed ||= await may(approver)
  }
  if (!allowed) throw refusal(decider, live[0].principal)
  // Still running (not parked yet), resuming, resumed or cancelled: the cancel lost.
  if (live.some((suspension) => suspension.status !== 'parked')) {
    throw new DecisionConflictError()
  }
  const calls = deniedCalls(items)
  let changed = false
  try {
    await deps.sink.append(streamRunId, {
      frames: cancelFrames(calls),
      evenIfClosed: true,
      within: async (trx) => {
        const won = await deps.store.settling.cancel(
          trx,
          streamRunId,
          decider.principal?.id ?? null,
          calls
        )
        if (won === 'changed') changed = true
        if (won !== true) throw new DecisionConflictError()
        await alsoWithin?.(trx)
        await sinkInternals(deps.sink).lifecycle.record(trx, {
          type: 'run.cancelled',
          data: {
            runId: streamRunId,
            streamRunId,
            threadId: items[0]?.threadId ?? null,
            status: 'cancelled',
            park: live[0].park,
            via: decider.via ?? 'api',
            decidedBy: decider.principal?.id ?? null,
          },
        })
      },
    })
  } catch (error) {
    if (changed) return 'changed' as const
    throw error
  }
  recordParksCancelled(
    pending.map((item) => Date.parse(item.createdAt)),
    nowMs()
  )
  return { status: 'cancelled' as const, streamRunId }
}

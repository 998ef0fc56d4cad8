import type { StreamFrame } from '../core/frames.js'
import type { AppendPlan } from '../store/append_plan.js'
import type { TableNames } from '../store/schema.js'
import type { StopRequests } from '../store/stop_requests.js'
import { isLockConflict, isRefusal, isTransientError } from '../store/transient.js'
import { appendFrames, type AppendContext } from './append.js'
import { RUN_FAILED_MESSAGE } from './subscriber.js'
import { lifecycleIds, NO_LIFECYCLE, type LifecycleRecorder } from '../core/lifecycle.js'

/**
 * A stream whose writer's lease lapsed (the writer died): taken over by a replica that can
 * continue its segment, or settled, exactly once. The sink's `takeOver` and `settleLapsed`.
 */

/**
 * The takeover's commit: once the lease lapsed, and only when the stream records a running
 * segment, `frames` are appended in the commit that moves the writer epoch on. Returns where the
 * stream is and the segment's record, or `null` (the lease holds, no segment, another won).
 */
export async function takeOverSegment(
  append: AppendContext,
  tables: TableNames,
  leaseMs: number,
  runId: string,
  frames: StreamFrame[]
): Promise<{ lastSeq: number; epoch: number; segment: unknown } | null> {
  let segment: unknown = null
  const result = await appendFrames(append, runId, {
    frames,
    onlyIfLeaseLapsed: true,
    takeOver: true,
    leaseMs,
    within: async (trx) => {
      const row = await trx.from(tables.streams).select('segment').where('run_id', runId).first()
      segment = JSON.parse(row.segment)
    },
  })
  if (!result || result.epoch === undefined) return null
  return { lastSeq: result.rows.at(-1)?.seq ?? result.before, epoch: result.epoch, segment }
}

/** What settling a lapsed stream takes of its sink. */
export interface LapseDeps {
  continueLapsed?: (runId: string) => Promise<boolean>
  onError?: (error: unknown) => void
  stops: Pick<StopRequests, 'state'>
  append: (
    plan: Pick<AppendPlan, 'frames' | 'end' | 'onlyIfLeaseLapsed' | 'within'>
  ) => Promise<unknown>
  /** The stream's end is recorded as a lifecycle event, in the end's transaction. */
  lifecycle?: LifecycleRecorder
  dropSegment: () => Promise<unknown>
}

/**
 * Continue a lapsed stream on this replica when its segment can be (`continueLapsed`), else end
 * it exactly once: `cancelled` when someone stopped it before its writer died, else failed (an
 * `error` frame `run_failed`). Nothing when the lease holds again (another replica took it).
 */
export async function settleLapsed(deps: LapseDeps, runId: string): Promise<void> {
  try {
    if (await deps.continueLapsed?.(runId)) return
  } catch (error) {
    // The database away or a lock conflict: the next poll or sweep tries again (failing the run
    // now would lose a segment another try may continue).
    if (isTransientError(error) || isLockConflict(error)) throw error
    deps.onError?.(error)
  }
  // Someone stopped it before its writer died: it ends as the stop asked, not as a failure.
  const state = await deps.stops.state(runId)
  const stopped = state?.stopMode
  try {
    await deps.append({
      frames: [
        stopped
          ? { t: 'event', event: { kind: 'cancelled' } }
          : { t: 'error', code: 'run_failed', message: RUN_FAILED_MESSAGE },
      ],
      end: stopped ? 'ended' : 'failed',
      onlyIfLeaseLapsed: true,
      within: (trx) =>
        (deps.lifecycle ?? NO_LIFECYCLE).record(trx, {
          type: stopped ? 'run.cancelled' : 'run.failed',
          data: {
            ...lifecycleIds({ runId, streamRunId: runId }, stopped ? 'cancelled' : 'failed'),
            ...(stopped ? {} : { code: 'run_failed' }),
          },
        }),
    })
  } catch (error) {
    // Its writes are refused: no replica takes it over again (its readers are told from memory).
    if (isRefusal(error)) await deps.dropSegment().catch(() => {})
    throw error
  }
}

import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { Parking } from '../parking/parking.js'
import type { AgUiRun, AgUiRunStore } from '../store/door_runs.js'
import type { Principal } from '../core/run.js'
import type { UserMessage } from '../core/user_message.js'
import type { RunDriver } from './driver.js'

/**
 * What every door does with runs, whatever its protocol (the AG-UI door and the AI SDK UI
 * message stream door share these rules, and the run rows of `store/door_runs.ts`).
 */

/** What a new run records; the rest (its own stream, from seq 0) is implied. */
export type NewRun = Omit<AgUiRun, 'createdAt' | 'streamRunId' | 'afterSeq' | 'kind' | 'resumeHash'>

/**
 * Record a new run (its own stream) and start it, `said` (what the person said, checked) its
 * first frame. Returns the recorded run, or `null`, changing
 * nothing, when the run id is taken, by a run or by a stream the host opened itself (not a
 * client's to take over).
 */
export async function startRun(
  deps: { sink: LucidTokenStreamSink; runs: AgUiRunStore; driver: RunDriver },
  run: NewRun,
  input: unknown,
  principal: Principal | null,
  said?: UserMessage | null
) {
  if (await deps.sink.has(run.runId)) return null
  const recorded = {
    ...run,
    streamRunId: run.runId,
    afterSeq: 0,
    kind: 'start' as const,
    resumeHash: null,
  }
  if (!(await deps.runs.insert(recorded))) return null
  try {
    await deps.driver.start({
      runId: run.runId,
      threadId: run.threadId,
      input,
      principal,
      userMessage: said,
    })
  } catch (error) {
    await deps.runs.remove(run.runId)
    throw error
  }
  return recorded
}

/**
 * Whether the stream goes on after the segment that ended at `end`: reopened, ended again
 * later, or decided and about to be resumed (its answers are stored after the end, nothing is
 * pending and it was not cancelled), so a reader waits for the continuation instead of being
 * served the decided park again. Read in one snapshot (`ParkingQueries.streamAfter`): a resume
 * reopens the stream and marks its suspension resumed, and two reads apart could see the stream
 * from before (still ended) and the suspension from after (resumed).
 */
export async function streamGoesOn(deps: { parking: Parking }, streamRunId: string, end: number) {
  const after = await deps.parking.queries.streamAfter(streamRunId, end)
  if (!after) return false
  if (after.stream.status === 'open' || after.nextEnd !== null) return true
  // Not reopened yet: the park was claimed by a replica about to resume it, or decided and
  // waiting for a claim (the sweeper's, if no replica took it). A cancelled one never continues.
  if (after.suspension === 'claimed') return true
  return after.suspension === 'parked' && after.pending === 0
}

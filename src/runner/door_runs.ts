import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { TurnTakenError, type DoorRun, type DoorRunStore } from '../store/door_runs.js'
import type { Principal } from '../core/run.js'
import type { UserMessage } from '../core/user_message.js'
import type { RunDriver } from './driver.js'

/**
 * What every door does with runs, whatever its protocol (the AG-UI door and the AI SDK UI
 * message stream door share these rules, and the run rows of `store/door_runs.ts`); whether a
 * stream goes on after a segment end is the door kernel's verdict (`src/door/verdict.ts`).
 */

/** What a new run records; the rest (its own stream, from seq 0) is implied. */
export type NewRun = Omit<DoorRun, 'createdAt' | 'streamRunId' | 'afterSeq' | 'kind' | 'resumeHash'>

/** What {@link startRun} answers when the thread is another principal's (a claim lost). */
export const THREAD_TAKEN = 'thread_taken'

/**
 * What {@link startRun} answers when another run of the thread was recorded after the one the
 * door judged the thread by (two messages at once): nothing was written; judge it again.
 */
export const TURN_TAKEN = 'turn_taken'

/**
 * Record a new run (its own stream) and start it, `said` (what the person said, checked) its
 * first frame. The thread is claimed for the run's owner first (`DoorRunStore.claimThread`, one
 * atomic statement): {@link THREAD_TAKEN}, changing nothing, when another principal's claim
 * landed first (answer it like another's thread). The run is recorded in the transaction that
 * opens its stream, as the thread's turn after `after` (the thread's newest run its door judged
 * it by; `DoorRunStore.insertTurn`): {@link TURN_TAKEN}, changing nothing, when another run was
 * recorded first. Returns the recorded run, or `null`, changing nothing, when the run id is
 * taken, by a run or by a stream the host opened itself (not a client's to take over).
 */
export async function startRun(
  deps: { sink: LucidTokenStreamSink; runs: DoorRunStore; driver: RunDriver },
  run: NewRun,
  input: unknown,
  principal: Principal | null,
  said: UserMessage | null,
  after: string | null
) {
  if (await deps.sink.has(run.runId)) return null
  if (!(await deps.runs.claimThread(run.threadId, run.ownerId))) return THREAD_TAKEN
  const recorded = {
    ...run,
    streamRunId: run.runId,
    afterSeq: 0,
    kind: 'start' as const,
    resumeHash: null,
  }
  try {
    await deps.driver.start({
      runId: run.runId,
      threadId: run.threadId,
      input,
      principal,
      userMessage: said,
      within: (trx) => deps.runs.insertTurn(trx, recorded, after),
    })
  } catch (error) {
    if (error instanceof TurnTakenError) return TURN_TAKEN
    // The same run id recorded meanwhile (a repeat, or a race lost): nothing of this one stays.
    if (await deps.runs.find(run.runId)) return null
    throw error
  }
  return recorded
}

import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { DoorRun, DoorRunStore } from '../store/door_runs.js'
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
 * Record a new run (its own stream) and start it, `said` (what the person said, checked) its
 * first frame. The thread is claimed for the run's owner first (`DoorRunStore.claimThread`, one
 * atomic statement): {@link THREAD_TAKEN}, changing nothing, when another principal's claim
 * landed first (answer it like another's thread). Returns the recorded run, or `null`, changing
 * nothing, when the run id is taken, by a run or by a stream the host opened itself (not a
 * client's to take over).
 */
export async function startRun(
  deps: { sink: LucidTokenStreamSink; runs: DoorRunStore; driver: RunDriver },
  run: NewRun,
  input: unknown,
  principal: Principal | null,
  said?: UserMessage | null
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

import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import {
  ThreadTakenError,
  TurnTakenError,
  type DoorRun,
  type DoorRunStore,
} from '../store/door_runs.js'
import { StreamExistsError } from '../store/stream_store.js'
import type { StreamState } from '../store/rows.js'
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

/** A run {@link startRun} recorded, and its stream's row as the start created it. */
export type StartedRun = Omit<DoorRun, 'createdAt'> & { stream: StreamState }

/**
 * Record a new run (its own stream) and start it, `said` (what the person said, checked) its
 * first frame, in ONE transaction (`RunDriver.start` with `fresh`): the stream is created (never
 * an existing one reopened), the thread claimed for the run's owner and locked, and the run
 * recorded as the thread's turn after `after` (the thread's newest run its door judged it by;
 * `DoorRunStore.insertTurn`), with the `run.started` outbox row and the trace context. Answers,
 * changing nothing: {@link THREAD_TAKEN} when another principal's claim on the thread landed
 * first (answer it like another's thread); {@link TURN_TAKEN} when another run was recorded
 * first; `null` when the run id is taken, by a run or by a stream the host opened itself (not a
 * client's to take over). Else the recorded run, with its stream's row (`stream`: what the
 * door serves it from, unread).
 */
export async function startRun(
  deps: { sink: LucidTokenStreamSink; runs: DoorRunStore; driver: RunDriver },
  run: NewRun,
  input: unknown,
  principal: Principal | null,
  said: UserMessage | null,
  after: string | null
): Promise<StartedRun | typeof THREAD_TAKEN | typeof TURN_TAKEN | null> {
  const recorded = {
    ...run,
    streamRunId: run.runId,
    afterSeq: 0,
    kind: 'start' as const,
    resumeHash: null,
  }
  for (;;) {
    try {
      const started = await deps.driver.start({
        runId: run.runId,
        threadId: run.threadId,
        input,
        principal,
        userMessage: said,
        fresh: true,
        within: (trx) => deps.runs.insertTurn(trx, recorded, after),
      })
      return { ...recorded, stream: started.stream }
    } catch (error) {
      if (error instanceof TurnTakenError) return TURN_TAKEN
      if (error instanceof ThreadTakenError) return THREAD_TAKEN
      if (error instanceof StreamExistsError) return null
      // A schema without the threads table: tried again without the claim (once).
      if (deps.runs.threadsMissing(error)) continue
      // The same run id recorded meanwhile (a repeat, or a race lost): nothing of this one stays.
      if (await deps.runs.find(run.runId)) return null
      throw error
    }
  }
}

import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { DoorRunStore } from '../store/door_runs.js'
import type { ParkingReads } from '../parking/store_reads.js'
import type { ParkingDecisions } from '../parking/decisions.js'
import type { Decider } from '../parking/policy.js'
import { isStopMode, type StopMode, type StopState } from '../store/stop_requests.js'
import {
  DecisionConflictError,
  InvalidStopError,
  ParkedItemNotFoundError,
  RunFinishedError,
  RunNotFoundError,
} from '../errors.js'
import { DEFAULTS } from '../defaults.js'
import { waitForEnd } from './stream_end.js'
import { RunList } from '../store/run_list.js'
import type { RunDriver } from './driver.js'

/**
 * What a stop answers: `cancelled` once the run's stream ended cancelled (at once for a parked
 * run), `stopping` when the run had not ended within the wait (its replica is slow to hear, or
 * dead: then the lease settles it). `streamRunId` is the stream the stop ended.
 */
export interface StopOutcome {
  status: 'cancelled' | 'stopping'
  streamRunId: string
}

/** What run control reads and writes through (the composition root gives them). */
export interface RunControlDeps {
  sink: LucidTokenStreamSink
  driver: RunDriver
  runs: DoorRunStore
  reads: Pick<ParkingReads, 'latestSuspension'>
  decisions: Pick<ParkingDecisions, 'cancel'>
}

/**
 * Stop a run, talking or parked, from any replica (LangGraph's cancel, CopilotKit's `stop`):
 * every door's stop route, the native cancel and the console's Stop button come here.
 *
 * - A talking run: the stop is recorded in its stream's row (`StopRequests`), which wakes the
 *   replica that runs it (NOTIFY, Redis, or its poll); that replica aborts the agent's `signal`
 *   and ends the stream `cancelled` after what was said (at most `stopGraceMs` later). A replica
 *   that cannot hear it (dead) loses its lease: the takeover ends the run cancelled, never runs
 *   it again. On this replica the driver is told at once.
 * - A parked run: cancelled as parking cancels (its pending items denied with the cancelled
 *   sentence), in one commit.
 * - `mode`: `keep` (default) or `rollback` (the turn is left out of the conversation and the
 *   chat's history).
 *
 * Authorized like a decision: the person the run is for, or a request the app's `admin` hook
 * passed; another person's run answers 404 like a missing one. Idempotent: a run already stopped
 * answers as the first stop did. A run that ended on its own is 409.
 *
 * @throws InvalidStopError (422), RunNotFoundError (404), RunFinishedError (409), and parking's
 *   errors for a parked run's cancel (403 to an approver the policy refuses)
 */
export class RunControl {
  constructor(
    readonly deps: RunControlDeps,
    readonly options: { waitMs?: number } = {}
  ) {}

  async stop(
    runId: string,
    decider: Decider,
    mode: unknown = 'keep',
    options: { waitMs?: number } = {}
  ): Promise<StopOutcome> {
    if (!isStopMode(mode)) throw new InvalidStopError([{ field: 'mode', rule: 'in' }])
    const { streamRunId, state, owner } = await this.#find(runId)
    if (!state) throw new RunNotFoundError()
    const waitMs = options.waitMs ?? this.options.waitMs ?? DEFAULTS.stopWaitMs
    const sees = decider.admin === true || owner === (decider.principal?.id ?? null)
    if (state.status === 'open') {
      if (!sees) throw new RunNotFoundError()
      return this.#stopTalking(runId, streamRunId, state, mode, decider, waitMs)
    }
    if (state.stopMode !== null && (await this.#endedCancelled(streamRunId))) {
      if (!sees) throw new RunNotFoundError()
      return { status: 'cancelled', streamRunId }
    }
    // Ended: parked (parking's cancel decides who may, approvers included), or done.
    try {
      await this.deps.decisions.cancel(streamRunId, decider)
    } catch (error) {
      if (!(error instanceof DecisionConflictError || error instanceof ParkedItemNotFoundError)) {
        throw error
      }
      if (!sees) throw new RunNotFoundError()
      // A stop that won meanwhile (it raced this one) is this one's outcome too.
      const now = await this.#stops.state(streamRunId)
      if (now?.status === 'open') {
        return this.#stopTalking(runId, streamRunId, now, mode, decider, waitMs)
      }
      if (now && (await this.#endedCancelled(streamRunId))) {
        return { status: 'cancelled', streamRunId }
      }
      throw new RunFinishedError()
    }
    await this.#stops.record(streamRunId, mode, decider.principal?.id ?? null)
    return { status: 'cancelled', streamRunId }
  }

  get #stops() {
    return sinkInternals(this.deps.sink).stops.requests
  }

  async #stopTalking(
    runId: string,
    streamRunId: string,
    state: StopState,
    mode: StopMode,
    decider: Decider,
    waitMs: number
  ): Promise<StopOutcome> {
    if (state.stopMode === null) {
      await this.#stops.request(streamRunId, mode, decider.principal?.id ?? null)
    }
    // Heard at once when it runs here; elsewhere, through the stream's wake-ups.
    this.deps.driver.stop(streamRunId, mode)
    if (!(await waitForEnd(this.deps.sink, streamRunId, waitMs))) {
      return { status: 'stopping', streamRunId }
    }
    // Its replica may have ended it another way before it heard the stop (the run finished
    // or parked on its own meanwhile): the stop answers as the run ended, never `cancelled`.
    const status = await this.#status(streamRunId)
    if (status === 'cancelled') return { status: 'cancelled', streamRunId }
    await this.#stops.withdraw(streamRunId)
    // Parked (or about to go on): stopped as a parked run is.
    if (status === 'parked' || status === 'running') {
      return this.stop(runId, decider, mode, { waitMs })
    }
    throw new RunFinishedError()
  }

  /** What the stream's run is doing (the runs list's rule: `cancelled` its stop's end). */
  async #status(streamRunId: string) {
    const runs = new RunList(() => sinkInternals(this.deps.sink).client, this.deps.sink.tables)
    const [run] = await runs.list({ runId: streamRunId, limit: 1 })
    return run?.status ?? null
  }

  /** Whether the stream ended stopped: its last frame the `cancelled` event. */
  async #endedCancelled(streamRunId: string) {
    return (await this.#status(streamRunId)) === 'cancelled'
  }

  /** The stream `runId` names (a door run's, a parked child's, its own) and whose it is. */
  async #find(runId: string) {
    const door = await this.deps.runs.find(runId)
    const suspension = door ? null : await this.deps.reads.latestSuspension(runId)
    const streamRunId = door?.streamRunId ?? suspension?.streamRunId ?? runId
    const state = await this.#stops.state(streamRunId)
    const top = door?.streamRunId === streamRunId ? door : await this.deps.runs.find(streamRunId)
    let owner: string | null = top?.ownerId ?? null
    if (!top) {
      owner = ownerInRecord(state?.segment) ?? suspension?.principal?.id ?? null
      if (owner === null && !suspension) {
        const own = await this.deps.reads.latestSuspension(streamRunId)
        owner = own?.principal?.id ?? null
      }
    }
    return { streamRunId, state, owner }
  }
}

/** The principal id a running segment's record names (see `segment_record.ts`). */
function ownerInRecord(segment: string | null | undefined): string | null {
  if (!segment) return null
  try {
    const record = JSON.parse(segment) as { meta?: { principal?: { id?: unknown } | null } }
    const id = record.meta?.principal?.id
    return typeof id === 'string' ? id : null
  } catch {
    return null
  }
}

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

/** How many times a stop reads a stream that changed under it before it answers 409. */
const RACE_TURNS = 4

/** What run control reads and writes through (the composition root gives them). */
export interface RunControlDeps {
  sink: LucidTokenStreamSink
  driver: RunDriver
  runs: DoorRunStore
  reads: Pick<ParkingReads, 'latestSuspension' | 'liveInStream'>
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
  /** How the runs list reads a run's status (`cancelled`: its stop's end), the one rule. */
  readonly #runList: RunList

  constructor(
    readonly deps: RunControlDeps,
    readonly options: { waitMs?: number } = {}
  ) {
    this.#runList = new RunList(() => sinkInternals(deps.sink).client, deps.sink.tables)
  }

  async stop(
    runId: string,
    decider: Decider,
    mode: unknown = 'keep',
    options: { waitMs?: number } = {}
  ): Promise<StopOutcome> {
    if (!isStopMode(mode)) throw new InvalidStopError([{ field: 'mode', rule: 'in' }])
    const found = await this.#find(runId)
    const { streamRunId, owner } = found
    if (!found.state) throw new RunNotFoundError()
    const waitMs = options.waitMs ?? this.options.waitMs ?? DEFAULTS.stopWaitMs
    const sees = decider.admin === true || owner === (decider.principal?.id ?? null)
    let state: StopState | null = found.state
    // Each turn reads the stream as it is now: a run that parked, finished or was stopped by
    // someone else meanwhile is answered as what it became (one outcome, whoever raced).
    for (let turn = 1; state && turn <= RACE_TURNS; turn++) {
      if ((state.status === 'open' || state.stopMode !== null) && !sees) {
        throw new RunNotFoundError()
      }
      if (state.stopMode !== null && state.status !== 'open') {
        if (await this.#endedCancelled(streamRunId)) return { status: 'cancelled', streamRunId }
        // It parked before its replica heard the stop (the park keeps the stop): cancelled now.
        const parked = await this.#cancelParked(streamRunId, mode, decider, sees)
        if (parked) return parked
        // Recorded for a decided run whose resume has not begun: it is honoured there.
        if (await this.#goesOn(streamRunId)) return { status: 'stopping', streamRunId }
        // Ended another way by a writer that never heard it: withdrawn, judged as it ended.
        await this.#stops.withdrawEnded(streamRunId)
        state = await this.#stops.state(streamRunId)
        continue
      }
      if (state.status === 'open') {
        const talking = await this.#stopTalking(streamRunId, state, mode, decider, waitMs)
        if (talking) return talking
        state = await this.#stops.state(streamRunId)
        continue
      }
      const parked = await this.#cancelParked(streamRunId, mode, decider, sees)
      if (parked) return parked
      // Nothing parked: done, unless it was resumed or stopped meanwhile.
      state = await this.#stops.state(streamRunId)
      if (state && state.status !== 'open' && state.stopMode === null) {
        if (!(await this.#goesOn(streamRunId))) break
        // Decided meanwhile, its resume not begun: recorded now (unless it began since), the
        // resumed segment's first look at its stop honours it.
        const by = decider.principal?.id ?? null
        if (await this.#stops.recordBeforeResume(streamRunId, mode, by, state.rev)) {
          return { status: 'stopping', streamRunId }
        }
        state = await this.#stops.state(streamRunId)
      }
    }
    if (!state) throw new RunNotFoundError()
    // Cancelled already in another way (a client gone with `abortOnDisconnect`): the same end.
    if (await this.#endedCancelled(streamRunId)) return { status: 'cancelled', streamRunId }
    throw new RunFinishedError()
  }

  get #stops() {
    return sinkInternals(this.deps.sink).stops.requests
  }

  /** Whether the stream ended stopped (the runs list's rule: its last frame `cancelled`). */
  async #endedCancelled(streamRunId: string) {
    const [run] = await this.#runList.list({ runId: streamRunId, limit: 1 })
    return run?.status === 'cancelled'
  }

  /**
   * Stop an open stream: record the stop (once), tell the driver, wait for the end. `null` once
   * it ended (stopped, or another way first: the end withdrew a stop it did not honour), or
   * when the request found it ended: the caller reads it again.
   */
  async #stopTalking(
    streamRunId: string,
    state: StopState,
    mode: StopMode,
    decider: Decider,
    waitMs: number
  ): Promise<StopOutcome | null> {
    if (state.stopMode === null) {
      const recorded = await this.#stops.request(streamRunId, mode, decider.principal?.id ?? null)
      if (recorded !== 'requested' && !recorded?.stopMode) return null
    }
    // Heard at once when it runs here; elsewhere, through the stream's wake-ups.
    this.deps.driver.stop(streamRunId, mode)
    if (!(await waitForEnd(this.deps.sink, streamRunId, waitMs))) {
      return { status: 'stopping', streamRunId }
    }
    // Ended: how (stopped, or another way first) is read again by the caller.
    return null
  }

  /**
   * Cancel an ended stream's parked run (parking's cancel decides who may, approvers included)
   * and record the stop's mode. `null` when nothing was parked (done, or decided meanwhile).
   */
  async #cancelParked(
    streamRunId: string,
    mode: StopMode,
    decider: Decider,
    sees: boolean
  ): Promise<StopOutcome | null> {
    const by = decider.principal?.id ?? null
    try {
      // The mode commits with the cancel: a queued message the cancel starts sees it.
      await this.deps.decisions.cancel(streamRunId, decider, (trx) =>
        this.#stops.record(streamRunId, mode, by, trx)
      )
    } catch (error) {
      if (!(error instanceof DecisionConflictError || error instanceof ParkedItemNotFoundError)) {
        throw error
      }
      if (!sees) throw new RunNotFoundError()
      return null
    }
    return { status: 'cancelled', streamRunId }
  }

  /** Whether an ended stream goes on: a segment of it parked and decided, not resumed yet. */
  async #goesOn(streamRunId: string) {
    const live = await this.deps.reads.liveInStream(streamRunId)
    return live.length > 0
  }

  /** The stream `runId` names (a door run's, a parked child's, its own) and whose it is. */
  async #find(runId: string) {
    // Read together: a run's own stream (a start's) is the usual case.
    const [door, itself] = await Promise.all([this.deps.runs.find(runId), this.#stops.state(runId)])
    const suspension = door ? null : await this.deps.reads.latestSuspension(runId)
    const streamRunId = door?.streamRunId ?? suspension?.streamRunId ?? runId
    const state = streamRunId === runId ? itself : await this.#stops.state(streamRunId)
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

import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { randomUUID } from 'node:crypto'
import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { LucidSinkWriter } from '../sink/writer.js'
import type { ClaimedSuspension, ParkingStore } from '../parking/parking_store.js'
import type { Principal, RunMeta } from '../core/run.js'
import type { DeliveredFrame } from '../core/frames.js'
import { userMessageFrame, type UserMessage } from '../core/user_message.js'
import { DoorRunStore } from '../store/door_runs.js'
import { StreamExistsError } from '../store/stream_store.js'
import type { StreamState } from '../store/rows.js'
import { earlierTurns, type HistoryBounds } from './conversation.js'
import { runContext, type RunContextReads } from './run_context.js'
import {
  type AgentRunner,
  type ContinueContext,
  type ResumeContext,
  type RunContext,
  type RunOutcome,
} from './contract.js'
import { continuedFrame, segmentRecord, type SegmentRecord } from './segment_record.js'
import { finishSegment } from './segment_outcome.js'
import { DEFAULTS } from '../defaults.js'
import { ReplicaShutdownError } from '../errors.js'
import { Drain, SHUTDOWN_OUTCOME } from './drain.js'
import { SegmentStop, STOPPED_OUTCOME } from './segment_stop.js'
import type { StopMode } from '../store/stop_requests.js'
import { lifecycleIds } from '../core/lifecycle.js'
import { nowMs } from '../store/clock.js'
import { recordResumed, recordRunStarted, recordSegmentEnded } from '../telemetry/metrics/index.js'
import { TraceContexts } from '../store/trace_contexts.js'
import type { TraceOptions } from '../telemetry/traces/index.js'
import { RunTraces } from './run_traces.js'

export interface DriverOptions {
  /** This replica's name in claims (default: a random id per process). */
  replicaId?: string
  /** A claimed suspension not started within this long is claimable again. Default 30000. */
  claimLeaseMs?: number
  /** Told about failures the driver could not write into a stream. */
  onError?: (error: unknown) => void
  /** How much of a thread's earlier turns `RunContext.conversation()` gives (`history`). */
  history?: HistoryBounds
  /**
   * After a stop aborted a segment's `signal`, how long its runner may take to return before
   * the segment ends `cancelled` without it. Default 2000.
   */
  stopGraceMs?: number
  /** Told once a segment ended its stream here (not parked): the thread's queue may go on. */
  onStreamEnd?: (meta: RunMeta) => Promise<unknown>
  /** The run's spans (config `telemetry`): the agent's name, `enduser.id` opt-in. */
  telemetry?: TraceOptions
}

/** Thrown inside a resume's reopen when its claim no longer holds: the reopen is undone. */
class ClaimLapsed extends Error {}

/** Whether a value survives JSON (the checkpoint is stored as JSON text). */
function isJson(value: unknown) {
  try {
    return JSON.stringify(value ?? null) !== undefined
  } catch {
    return false
  }
}

/**
 * Runs segments of runs: opens the stream, calls the host's runner, and writes the outcome
 * (docs/design.md, "Layers"). A thrown error becomes an `error` frame
 * with a stable code and a fixed sentence: its text never reaches a reader.
 */
export class RunDriver {
  readonly replicaId: string
  #running = new Map<string, SegmentStop>()
  #active = new Set<Promise<unknown>>()
  #drain = new Drain()
  /** The door runs of a thread: its turns, for `RunContext.conversation()`. */
  readonly #runs: DoorRunStore
  /** The runs' spans (docs/observability.md). */
  readonly #traces: RunTraces

  constructor(
    readonly sink: LucidTokenStreamSink,
    /** The parking store's parts a run's segments use: parks (a segment's end) and claims. */
    readonly parkingStore: Pick<ParkingStore, 'parks' | 'claims'>,
    readonly runner: AgentRunner,
    readonly options: DriverOptions = {}
  ) {
    this.replicaId = options.replicaId ?? `replica-${randomUUID()}`
    this.#runs = new DoorRunStore(() => sinkInternals(sink).client, sink.tables)
    this.#traces = new RunTraces(new TraceContexts(() => sinkInternals(sink).client, sink.tables), {
      ...options.telemetry,
      runnerName: runner.name,
    })
  }

  /**
   * Start a run: open its stream (before this resolves, so a reader can subscribe at once) and
   * run its first segment in the background. `userMessage` (what the person said, checked by
   * the door: `checkUserMessage`) is the stream's first frame, written before the runner starts.
   *
   * @throws ReplicaShutdownError while this replica drains (nothing opened)
   */
  async start(run: {
    runId: string
    threadId?: string
    input?: unknown
    principal?: Principal | null
    userMessage?: UserMessage | null
    /** Writes committed with the stream's open (a door's run record); what it throws undoes it. */
    within?: (trx: TransactionClientContract) => Promise<void>
    /**
     * A new stream only (a door's client run): never reopen one the run id has already;
     * `StreamExistsError` then, nothing changed.
     */
    fresh?: boolean
  }): Promise<{ runId: string; done: Promise<RunOutcome>; stream: StreamState }> {
    if (this.#drain.draining) throw new ReplicaShutdownError()
    const meta: RunMeta = {
      runId: run.runId,
      streamRunId: run.runId,
      threadId: run.threadId ?? run.runId,
      parentRunId: null,
      principal: run.principal ?? null,
    }
    const lifecycle = sinkInternals(this.sink).lifecycle
    // The run's root span, in the request's context; its W3C context is stored with the open.
    const trace = this.#traces.first(meta)
    const within = trace.within(async (trx) => {
      await run.within?.(trx)
      await lifecycle.record(trx, { type: 'run.started', data: lifecycleIds(meta, 'running') })
    })
    // ONE transaction: the stream, the caller's writes, the outbox row and the trace context.
    const record = segmentRecord(meta, run.input ?? null)
    const opened = await (
      run.fresh
        ? this.sink.create(run.runId, meta, within, record).then((created) => {
            if (!created) throw new StreamExistsError(run.runId)
            return created
          })
        : this.sink.openWithState(run.runId, meta, within, record)
    ).catch((error) => {
      trace.fail(error)
      throw error
    })
    const writer = opened.writer
    recordRunStarted()
    const said = run.userMessage
    const done = this.#track(
      trace.run(() =>
        this.#segment(writer, meta, run.input ?? null, async (ctx) => {
          if (said) await writer.write(userMessageFrame(said))
          return this.runner.start(ctx)
        })
      )
    )
    return { runId: run.runId, done, stream: opened.stream }
  }

  /**
   * Resume a claimed segment in the same stream: reopen the stream and mark the segment
   * resumed (so no other replica takes it) in one commit, if this replica's claim still holds
   * (else `null`, nothing changed), then call `resume` once with the checkpoint and every settled item of the
   * runs that parked in it (as the run that parked, or as the segment's run when several did).
   */
  async resume(claimed: ClaimedSuspension): Promise<RunOutcome | null> {
    // A claim that landed while this replica began to drain: given back, for another replica.
    if (this.#drain.draining) {
      await this.parkingStore.claims.release(claimed.streamRunId, this.replicaId)
      return null
    }
    const meta: RunMeta = {
      runId: claimed.runId,
      streamRunId: claimed.streamRunId,
      threadId: claimed.threadId,
      parentRunId: claimed.parentRunId,
      principal: claimed.principal,
    }
    // The reopen and the suspension marked resumed commit together, only while this replica's
    // claim holds: a claim that lapsed (a stalled replica, another one resumed it since) leaves
    // the stream as it is, never reopened with nobody writing.
    let writer: LucidSinkWriter
    try {
      writer = await this.sink.open(
        claimed.streamRunId,
        meta,
        async (trx) => {
          if (
            !(await this.parkingStore.claims.markResumed(claimed.streamRunId, this.replicaId, trx))
          ) {
            throw new ClaimLapsed()
          }
          await sinkInternals(this.sink).lifecycle.record(trx, {
            type: 'run.resumed',
            data: { ...lifecycleIds(meta, 'running'), park: claimed.park },
          })
        },
        segmentRecord(meta, claimed.input, claimed.parks)
      )
    } catch (error) {
      if (error instanceof ClaimLapsed) return null
      throw error
    }
    recordResumed(claimed.decidedAt, nowMs())
    // The top run may park again after a child's continuation: it parks under its own meta.
    writer.adopt({ ...meta, runId: claimed.streamRunId, parentRunId: null })
    const trace = await this.#traces.later(meta)
    return trace.run(() =>
      this.#segment(writer, meta, claimed.input, (ctx) =>
        this.runner.resume({
          ...ctx,
          checkpoint: claimed.checkpoint,
          items: claimed.items,
        } as ResumeContext)
      )
    )
  }

  /**
   * Continue, on this replica, the segment of a stream whose writer died (its lease lapsed):
   * take the stream over (one commit, first replica wins: it writes a `segment-continued` event
   * and moves the writer epoch on, so the dead writer, if it comes back, writes nothing more),
   * then call the runner's `continue` with what the segment was given (for a resume: its
   * checkpoint and settled items, read again). Resolves true when the stream is taken care of:
   * continued here, or left to another replica (this one drains); false when the runner cannot
   * be continued or the stream could not be taken over (the caller fails it, if still lapsed).
   */
  async continueLapsed(streamRunId: string): Promise<boolean> {
    const runner = this.runner
    if (typeof runner.continue !== 'function') return false
    // A draining replica takes nothing over: the segment stays for another replica.
    if (this.#drain.draining) return true
    const taken = await this.sink.takeOver(
      streamRunId,
      [continuedFrame()],
      (record) => (record as SegmentRecord).meta
    )
    if (!taken) return false
    const record = taken.segment as SegmentRecord
    const meta: RunMeta = { ...record.meta, streamRunId }
    const writer = taken.writer
    writer.adopt({ ...meta, runId: streamRunId, parentRunId: null })
    const run = async () => {
      const trace = await this.#traces.later(meta, true)
      return trace.run(() => carryOn())
    }
    const carryOn = async () => {
      // Stopped while nobody ran it: the segment ends cancelled, its runner never called.
      const state = await sinkInternals(this.sink).stops.requests.state(streamRunId)
      if (state?.stopMode) {
        return this.#segment(writer, meta, record.input, async () => ({ status: 'cancelled' }))
      }
      const resumed = record.parks?.length
        ? await this.parkingStore.claims.resumedSegment(record.parks)
        : null
      return this.#segment(writer, meta, record.input, (ctx) =>
        runner.continue!({
          ...ctx,
          resumed: resumed !== null,
          checkpoint: resumed?.checkpoint ?? null,
          items: resumed?.items ?? [],
        } as ContinueContext)
      )
    }
    void this.#track(run()).catch((error) => this.options.onError?.(error))
    return true
  }

  /** Whether this replica drains (a graceful shutdown): it starts and resumes nothing. */
  get draining() {
    return this.#drain.draining
  }

  /**
   * Drain this replica (a graceful shutdown): from now on `start` throws
   * {@link ReplicaShutdownError} and no suspension is claimed here (another replica resumes it;
   * a parked run is untouched). Segments running get `drainMs` to finish; then their `signal`
   * aborts and each ends at once with an `error` frame `replica_shutdown` (retryable), whatever
   * its runner still does (what it writes after is refused). Resolves once every segment has
   * written its outcome.
   */
  async drain(drainMs: number = DEFAULTS.drainMs) {
    this.#drain.begin()
    let timer: NodeJS.Timeout | undefined
    const up = new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)))
    await Promise.race([this.settled(), up])
    clearTimeout(timer)
    this.#drain.expire()
    await this.settled()
  }

  /** Resolves once every segment this driver started (or resumed) has written its outcome. */
  async settled(): Promise<void> {
    while (this.#active.size > 0) await Promise.allSettled([...this.#active])
  }

  #track<T>(work: Promise<T>): Promise<T> {
    this.#active.add(work)
    const done = () => this.#active.delete(work)
    work.then(done, done)
    return work
  }

  /**
   * Stop a run that is running on this replica: its `signal` aborts, and it ends `cancelled`
   * (after at most `stopGraceMs`). A stop recorded in the store (`RunControl.stop`) reaches the
   * replica that runs it through its stop watch; this is the same stop, heard at once here.
   * Returns whether one was running here.
   */
  stop(streamRunId: string, mode: StopMode = 'keep') {
    const segment = this.#running.get(streamRunId)
    segment?.stop(mode)
    return Boolean(segment)
  }

  /** Abort a run that is running on this replica (`abortOnDisconnect`): a {@link stop} kept. */
  abort(streamRunId: string) {
    return this.stop(streamRunId, 'keep')
  }

  /** What a run's context reads through the driver (`run_context.ts`). */
  readonly #reads: RunContextReads = {
    history: (writer, streamRunId) => this.#history(writer, streamRunId),
    conversation: (meta) => this.#conversation(meta),
  }

  /** The stored frames of `streamRunId` (see `RunContext.history`), after a flush. */
  async *#history(writer: LucidSinkWriter, streamRunId: string): AsyncIterable<DeliveredFrame> {
    await writer.flush()
    for await (const item of this.sink.replay(streamRunId)) {
      if (item.t !== 'end') yield item
    }
  }

  /** The thread's earlier turns (see `RunContext.conversation`), within the `history` bounds. */
  async *#conversation(meta: RunMeta): AsyncIterable<DeliveredFrame> {
    yield* await earlierTurns({ sink: this.sink, runs: this.#runs }, meta, this.options.history)
  }

  async #segment(
    writer: LucidSinkWriter,
    meta: RunMeta,
    input: unknown,
    call: (ctx: RunContext) => Promise<RunOutcome>
  ): Promise<RunOutcome> {
    const controller = new AbortController()
    const stop = new SegmentStop(controller, this.options.stopGraceMs ?? DEFAULTS.stopGraceMs)
    this.#running.set(meta.streamRunId, stop)
    // A stop recorded on any replica reaches this one through the stream's wake-ups.
    const unwatch = sinkInternals(this.sink).stops.watch(meta.streamRunId, (mode) =>
      stop.stop(mode)
    )
    // The database stayed away past the outage bound: the agent is stopped at once (the writer
    // records the failure when the database is back).
    writer.onLost = () => controller.abort()
    // Another replica took the stream over (this one was taken for dead): the agent stops, and
    // nothing of this segment's outcome is written (the stream is the other replica's now).
    writer.onLeaseLost = () => controller.abort()
    const segment = { stopped: false }
    const drain = this.#drain.watch()
    let outcome: RunOutcome
    try {
      const running = call(runContext(this.#reads, meta, writer, input, controller.signal, segment))
      // Stopped by a drain: what the runner still does (or throws) no longer counts.
      running.catch(() => {})
      outcome = await Promise.race([running, drain.stopped, stop.halted])
      if (outcome === SHUTDOWN_OUTCOME || outcome === STOPPED_OUTCOME) {
        segment.stopped = true
        controller.abort()
      }
    } catch {
      outcome = { status: 'failed' }
    } finally {
      drain.done()
      stop.done()
      unwatch()
      this.#running.delete(meta.streamRunId)
    }
    // Taken for dead meanwhile (another replica continues the segment): nothing of this
    // outcome is written, nor are the segment's parks touched.
    if (!(await writer.holdsStream())) {
      writer.release()
      return { status: 'failed' }
    }
    if (writer.lost) outcome = { status: 'failed' }
    // Stopped: what the runner returned (finished, even parked) gives way to the stop.
    else if (stop.mode !== null) outcome = { status: 'cancelled' }
    else if (segment.stopped) outcome = { status: 'failed', code: 'replica_shutdown' }
    else if (controller.signal.aborted && outcome.status !== 'parked') {
      outcome = { status: 'cancelled' }
    }
    if (outcome.status === 'parked' && !isJson(outcome.checkpoint)) {
      // A checkpoint that cannot be stored could never be resumed: fail now, not later.
      outcome = { status: 'failed' }
    }
    try {
      outcome = await finishSegment(
        {
          parks: this.parkingStore.parks,
          outageBoundMs: this.sink.options.outageBoundMs,
          tryResume: (runId, park) => this.tryResume(runId, park),
          withdrawStop: (trx, runId) =>
            sinkInternals(this.sink).stops.requests.withdraw(trx, runId),
          lifecycle: sinkInternals(this.sink).lifecycle,
        },
        writer,
        meta,
        input,
        outcome
      )
      recordSegmentEnded(outcome.status)
      const onEnd = outcome.status !== 'parked' && !writer.lost && this.options.onStreamEnd
      if (onEnd) void this.#track(onEnd(meta)).catch((e) => this.options.onError?.(e))
    } catch (error) {
      this.options.onError?.(error)
    } finally {
      // Whatever happened, this writer stops renewing the lease: if the outcome could not be
      // written, the lease lapses and readers get run_failed instead of waiting forever.
      writer.release()
    }
    return outcome
  }

  /** Claim a suspension if it is ready and resume it in the background. Returns whether it did. */
  async tryResume(
    runId: string,
    park: number,
    claimLeaseMs = this.options.claimLeaseMs ?? DEFAULTS.claimLeaseMs
  ): Promise<boolean> {
    // A draining replica claims nothing: the suspension stays ready for another one.
    if (this.#drain.draining) return false
    const claimed = await this.parkingStore.claims.claim(runId, park, this.replicaId, claimLeaseMs)
    if (!claimed) return false
    void this.#track(this.resume(claimed)).catch((error) => this.options.onError?.(error))
    return true
  }
}

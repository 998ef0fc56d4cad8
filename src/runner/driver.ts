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
import { earlierTurns } from './conversation.js'
import {
  type AgentRunner,
  type ContinueContext,
  type ResumeContext,
  type RunContext,
  type RunOutcome,
} from './contract.js'
import { continuedFrame, segmentRecord, type SegmentRecord } from './segment_record.js'
import { DEFAULTS } from '../defaults.js'
import { ReplicaShutdownError } from '../errors.js'
import { Drain } from './drain.js'
import type { SegmentStop } from './segment_stop.js'
import type { StopMode } from '../store/stop_requests.js'
import { lifecycleIds } from '../core/lifecycle.js'
import { nowMs } from '../store/clock.js'
import { recordResumed, recordRunStarted } from '../telemetry/metrics/index.js'
import { TraceContexts } from '../store/trace_contexts.js'
import { RunTraces } from './run_traces.js'
import type { DriverOptions } from './driver_options.js'
import { runSegment, type SegmentHost } from './segment_run.js'

export type { DriverOptions }

/** Thrown inside a resume's reopen when its claim no longer holds: the reopen is undone. */
class ClaimLapsed extends Error {}

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
  /** What running a segment needs of this driver (`segment_run.ts`), its run context's reads too. */
  readonly #host: SegmentHost

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
    this.#host = {
      sink,
      parks: parkingStore.parks,
      options,
      drain: this.#drain,
      running: this.#running,
      reads: {
        history: (writer, streamRunId) => this.#history(writer, streamRunId),
        conversation: (meta) => this.#conversation(meta),
      },
      tryResume: (runId, park) => this.tryResume(runId, park),
      track: (work) => this.#track(work),
    }
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

  /** Run one segment on this replica (`segment_run.ts`). */
  #segment(
    writer: LucidSinkWriter,
    meta: RunMeta,
    input: unknown,
    call: (ctx: RunContext) => Promise<RunOutcome>
  ): Promise<RunOutcome> {
    return runSegment(this.#host, writer, meta, input, call)
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

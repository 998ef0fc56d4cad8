import type { Database } from '@adonisjs/lucid/database'
import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { Tail } from '../follow/tail.js'
import type { AppendPlan, CommitResult } from '../store/append_plan.js'
import type { StreamState } from '../store/rows.js'
import { StreamExistsError, type StreamStore } from '../store/stream_store.js'
import type { StreamFrame } from '../core/frames.js'
import type { TokenStreamSink } from './spi.js'
import { appendFrames, type AppendContext } from './append.js'
import { purgeEnded, type PurgeOptions } from './purge.js'
import { LucidSinkWriter, type ParkHook } from './writer.js'
import { writerOptionsFor } from './writer_options.js'
import type { ClockWatch } from './clock_watch.js'
import type { SinkInternals } from './sink_internals.js'
import { settleLapsed, takeOverSegment } from './lapse.js'
import { assembleSink } from './sink_assembly.js'
import { LucidSinkReads, assertRunId } from './sink_reads.js'
import type { RunMeta } from '../core/run.js'
import type { LucidSinkOptions } from './sink_options.js'

export type { LucidSinkOptions, SubscribeOptions } from './sink_options.js'
export type { SinkInternals } from './sink_internals.js'

let internalsOf: (sink: LucidTokenStreamSink) => SinkInternals

/**
 * The Lucid `TokenStreamSink`: frames stored in SQL, consecutive text coalesced into one row,
 * any number of readers on any replica replaying from a cursor and then following live.
 *
 * Invariants: persist then publish; no gap and no duplicate from any cursor; seq gap-free and
 * commit-ordered per stream; a stream always ends (a dead writer's lease lapses and its readers
 * get an `error` frame `run_failed`).
 *
 * Timers and the LISTEN connection start with the first reader and stop with the last one, so a
 * sink that nobody reads (warmup, a console command) holds no resources.
 */
export class LucidTokenStreamSink extends LucidSinkReads implements TokenStreamSink {
  #store: StreamStore
  #tail: Tail
  #internals: SinkInternals
  #park: ParkHook | undefined
  #continueLapsed: ((runId: string) => Promise<boolean>) | undefined
  #onError: ((error: unknown) => void) | undefined
  /** Releases what the notifier setup opened itself (its `close`). */
  #closeNotifier: (() => Promise<void>) | undefined
  #writers = new Set<LucidSinkWriter>()
  #append: AppendContext
  #clock: ClockWatch

  static {
    internalsOf = (sink) => sink.#internals
  }

  /**
   * @param db the Lucid database the tables live on (`options.connection` names the connection)
   * @throws Error for an unknown connection, or an invalid byte budget
   */
  constructor(db: Database, options: LucidSinkOptions = {}) {
    // What the tail calls back into (never before the sink is made).
    let self: LucidTokenStreamSink
    const parts = assembleSink(db, options, {
      onLapsed: (runId) => self.settleLapsed(runId),
      clock: () => self.#clock.ready(),
    })
    const { reads, tail, store } = parts.internals
    super({
      resolved: parts.resolved,
      tables: parts.tables,
      reads,
      tail,
      dialect: () => store.dialect,
    })
    self = this
    this.#park = options.park
    this.#continueLapsed = options.continueLapsed
    this.#onError = options.onError
    this.#closeNotifier = parts.closeNotifier
    this.#store = parts.internals.store
    this.#tail = parts.internals.tail
    this.#clock = parts.internals.clock
    this.#internals = parts.internals
    this.#append = parts.append
  }

  /** The `onError` of the options, if any: what the doors warn through too. */
  get onError(): ((error: unknown) => void) | undefined {
    return this.#onError
  }

  /**
   * Open, or reopen, the writer for a run. A reopened stream (ended, or failed) continues its
   * sequence; several writers (a parent and its children, in any process) may hold one stream.
   *
   * @param meta the run that writes, when it is not the stream's own run (a delegated child), and
   *   the thread and principal parking rows record
   * @param within writes committed with the (re)open, or none: what it throws undoes the reopen
   *   and is rethrown (a resume marks its suspension resumed here, only while its claim holds)
   * @param segment what the segment that starts is (JSON, never served), recorded with the open
   *   so that another replica can continue it if this writer dies ({@link takeOver}); absent: the
   *   record stays as it is (a delegated child's writer)
   * @throws InvalidRunIdError for an id outside `[A-Za-z0-9_:.-]{1,191}`
   */
  async open(
    runId: string,
    meta: Partial<Omit<RunMeta, 'streamRunId'>> = {},
    within?: (trx: TransactionClientContract) => Promise<void>,
    segment?: unknown
  ): Promise<LucidSinkWriter> {
    const opened = await this.openWithState(runId, meta, within, segment)
    return opened.writer
  }

  /** {@link open}, with the stream's row as the open left it (a reader given it needs not read it). */
  openWithState(
    runId: string,
    meta: Partial<Omit<RunMeta, 'streamRunId'>> = {},
    within?: (trx: TransactionClientContract) => Promise<void>,
    segment?: unknown
  ): Promise<{ writer: LucidSinkWriter; stream: StreamState }> {
    return this.#open(runId, meta, within, segment)
  }

  /**
   * Create a new stream and its writer, as {@link open} does, but never reopen one: `null`,
   * nothing changed, when the run id has a stream already (open, ended or failed). What a door
   * starts a client's run with: one transaction, that creates the stream, runs `within` (the
   * door's run record) and wakes other replicas. `stream` is the stream's row as created (a
   * reader given it needs not read it).
   *
   * @throws InvalidRunIdError, or what `within` throws (nothing stays)
   */
  async create(
    runId: string,
    meta: Partial<Omit<RunMeta, 'streamRunId'>> = {},
    within?: (trx: TransactionClientContract) => Promise<void>,
    segment?: unknown
  ): Promise<{ writer: LucidSinkWriter; stream: StreamState } | null> {
    try {
      return await this.#open(runId, meta, within, segment, 'new')
    } catch (error) {
      if (error instanceof StreamExistsError) return null
      throw error
    }
  }

  async #open(
    runId: string,
    meta: Partial<Omit<RunMeta, 'streamRunId'>>,
    within: ((trx: TransactionClientContract) => Promise<void>) | undefined,
    segment: unknown,
    only?: 'new'
  ): Promise<{ writer: LucidSinkWriter; stream: StreamState }> {
    assertRunId(runId)
    // The lease is in the database's time: its clock is read before the first one is written.
    await this.#clock.ready()
    const recorded = segment === undefined ? undefined : JSON.stringify(segment)
    const leaseMs = this.options.leaseMs
    const opened = await this.#store.open(runId, leaseMs, within, recorded, only)
    return {
      writer: this.#writer(runId, meta, opened.lastSeq, opened.epoch),
      stream: opened.stream,
    }
  }

  /**
   * Take over the stream of a writer that died mid-segment: once its lease lapsed, and only when
   * the stream records a running segment (see {@link open}), `frames` (what records the
   * takeover) are appended in the commit that moves the stream's writer epoch on, so the old
   * writer, if it comes back, finds its lease lost and writes nothing more. One commit: the
   * first replica to claim wins. Returns the new writer (for `meta`, from the record) and the
   * record, or `null` (the lease holds, the stream is not open, it records no segment, or
   * another replica won).
   *
   * @throws InvalidRunIdError, InvalidFrameError
   */
  async takeOver(
    runId: string,
    frames: StreamFrame[],
    meta: (segment: unknown) => Partial<Omit<RunMeta, 'streamRunId'>>
  ): Promise<{ writer: LucidSinkWriter; segment: unknown } | null> {
    assertRunId(runId)
    await this.#clock.ready()
    const taken = await takeOverSegment(
      this.#append,
      this.tables,
      this.options.leaseMs,
      runId,
      frames
    )
    if (!taken) return null
    const { lastSeq, epoch, segment } = taken
    return { writer: this.#writer(runId, meta(segment), lastSeq, epoch), segment }
  }

  #writer(
    runId: string,
    meta: Partial<Omit<RunMeta, 'streamRunId'>>,
    lastSeq: number,
    epoch: number
  ): LucidSinkWriter {
    const hooks = { onError: this.#onError, park: this.#park }
    const options = writerOptionsFor(this.options, hooks, runId, meta, lastSeq, epoch)
    const writer = new LucidSinkWriter(runId, this.#append, options)
    this.#writers.add(writer)
    writer.onRelease = () => this.#writers.delete(writer)
    this.#tail.wake(runId)
    return writer
  }

  /**
   * Append frames to a stream outside any writer, in one transaction: the sink's one write path
   * (validated, stored, then handed to this replica's readers; other replicas are notified).
   * Settlements of parked items and a dead writer's failure go through here.
   *
   * @param plan `frames` in order; `end` closes the segment after them (`ended`, or `failed`
   *   for a dead writer); `within(trx, storedRows)` runs in the transaction (throwing rolls back);
   *   `onlyIfLeaseLapsed` appends only to a stream whose writer's lease lapsed; `evenIfClosed`
   *   appends to an ended or failed stream too (an end marker follows, its status stays). The
   *   frames are always validated here (the plan's writer-side fields are the writers' own).
   * @returns the commit's result (`before`, `rev`, the stored rows); `null` when there was nothing
   *   to write, or with `onlyIfLeaseLapsed` when the lease had not lapsed
   * @throws InvalidRunIdError, InvalidFrameError (nothing stored), StreamClosedError (not open,
   *   or with `evenIfClosed` does not exist), or what `within` throws
   */
  async append(
    runId: string,
    plan: Pick<AppendPlan, 'frames' | 'end' | 'within' | 'onlyIfLeaseLapsed' | 'evenIfClosed'>
  ): Promise<CommitResult | null> {
    assertRunId(runId)
    return appendFrames(this.#append, runId, plan)
  }
  /** Drop the run's stream: its rows are deleted and its readers end. */
  async close(runId: string): Promise<void> {
    assertRunId(runId)
    for (const writer of [...this.#writers]) {
      if (writer.runId === runId) writer.release()
    }
    await this.#store.remove(runId)
    this.#tail.wake(runId)
    await this.#tail.poll()
  }

  /**
   * Delete streams that ended more than `ttlMs` ago, with everything they owned; never an open
   * stream or a parked run's (`purgeEnded` in `purge.ts`). Resolves how many were removed.
   */
  purge(options: PurgeOptions = {}): Promise<number> {
    return purgeEnded(this.#store, this.#tail, this.options.ttlMs, options)
  }

  /** Stop timers and the LISTEN connection; open writers stop renewing their lease. */
  async shutdown() {
    // Replays end too (a reader mid-replay starts no read on a database about to close).
    this.stopReads()
    for (const writer of [...this.#writers]) writer.shutdown()
    await this.#tail.close()
    await this.#closeNotifier?.().catch(() => {})
  }

  /**
   * Open streams whose writer's lease lapsed with a segment recorded as running (the driver's:
   * one another replica may continue), oldest lapse first: what the parking sweeper settles
   * with {@link settleLapsed}, whether or not anyone reads them.
   */
  lapsedSegments(limit: number): Promise<string[]> {
    return this.#store.lapsedSegments(limit)
  }

  /** A stream whose writer's lease lapsed: continued here, or ended once (`lapse.ts`). */
  async settleLapsed(runId: string) {
    await this.#clock.ready()
    await settleLapsed(
      {
        continueLapsed: this.#continueLapsed,
        onError: this.#onError,
        stops: this.#internals.stops.requests,
        append: (plan) => this.append(runId, plan),
        dropSegment: () => this.#store.dropSegment(runId),
        lifecycle: this.#internals.lifecycle,
      },
      runId
    )
  }
}

/**
 * The sink's internals (its store, reads, tail and client) for the package's own layers and
 * tests: package-internal, never exported from the package's root (`index.ts`).
 */
export function sinkInternals(sink: LucidTokenStreamSink): SinkInternals {
  return internalsOf(sink)
}

import type { Database } from '@adonisjs/lucid/database'
import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { InvalidRunIdError } from '../errors.js'
import type { Tail } from '../follow/tail.js'
import type { TableNames } from '../store/schema.js'
import type { AppendPlan, CommitResult } from '../store/append_plan.js'
import type { StoredRow, StreamHead, StreamState } from '../store/rows.js'
import type { StreamReads } from '../store/stream_reads.js'
import { StreamExistsError, type StreamStore } from '../store/stream_store.js'
import { parseCursor, type Cursor } from '../core/cursor.js'
import { RUN_ID, type DeliveredFrame, type StreamFrame } from '../core/frames.js'
import { DEFAULTS } from '../defaults.js'
import type { TokenStreamSink } from './spi.js'
import { follow, type SegmentEnd } from './subscriber.js'
import { appendFrames, type AppendContext } from './append.js'
import {
  beyondHead,
  replayStored,
  storedHead,
  storedRows,
  type SupersededFrame,
} from './read_path.js'
import { purgeEnded, type PurgeOptions } from './purge.js'
import { LucidSinkWriter, type ParkHook } from './writer.js'
import { writerOptionsFor } from './writer_options.js'
import type { ClockWatch } from './clock_watch.js'
import type { SinkInternals } from './sink_internals.js'
import { settleLapsed, takeOverSegment } from './lapse.js'
import { assembleSink } from './sink_assembly.js'
import type { RunMeta } from '../core/run.js'
import type { LucidSinkOptions, ResolvedSinkOptions, SubscribeOptions } from './sink_options.js'

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
export class LucidTokenStreamSink implements TokenStreamSink {
  /** The options, every default applied. */
  readonly options: ResolvedSinkOptions
  /** The package's table names. */
  readonly tables: TableNames
  #store: StreamStore
  #reads: StreamReads
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
  #stopped = false

  static {
    internalsOf = (sink) => sink.#internals
  }

  /**
   * @param db the Lucid database the tables live on (`options.connection` names the connection)
   * @throws Error for an unknown connection, or an invalid byte budget
   */
  constructor(db: Database, options: LucidSinkOptions = {}) {
    const parts = assembleSink(db, options, {
      onLapsed: (runId) => this.settleLapsed(runId),
      clock: () => this.#clock.ready(),
    })
    this.options = parts.resolved
    this.tables = parts.tables
    this.#park = options.park
    this.#continueLapsed = options.continueLapsed
    this.#onError = options.onError
    this.#closeNotifier = parts.closeNotifier
    this.#store = parts.internals.store
    this.#reads = parts.internals.reads
    this.#tail = parts.internals.tail
    this.#clock = parts.internals.clock
    this.#internals = parts.internals
    this.#append = parts.append
  }

  /** What one reader reads at a time: rows, and UTF-8 bytes (`readerBytes`). */
  get #limits() {
    return { pageSize: this.options.pageSize, pageBytes: this.options.readerBytes }
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
   * Replay the run's frames after `options.after` (a cursor a reader was given), then follow live
   * until the stream ends. Each frame carries `cursor`. A stream that does not exist yields
   * nothing; one purged while read ends with an `error` frame (`run_failed`).
   *
   * @throws InvalidRunIdError, InvalidCursorError (before anything is read)
   */
  subscribe(runId: string, options: SubscribeOptions = {}): AsyncIterable<DeliveredFrame> {
    assertRunId(runId)
    const start = parseCursor(options.after)
    return follow(
      runId,
      start,
      this.#tail,
      this.#reads,
      this.#reading(options.signal)
    ) as AsyncIterable<DeliveredFrame>
  }

  /**
   * Like {@link subscribe}, with the end of every segment (a park) marked by a
   * {@link SegmentEnd}: what a door needs to end one protocol run per segment. With
   * `superseded`, components a later one replaced come too, flagged `superseded: true` (a
   * reader may meet a component before or after it is replaced: a door that must translate
   * both alike asks for them). `after`: a cursor string, or the {@link Cursor} itself.
   *
   * @throws InvalidRunIdError, InvalidCursorError
   */
  segments(
    runId: string,
    options: Omit<SubscribeOptions, 'after'> & {
      after?: string | Cursor
      superseded?: boolean
    } = {}
  ): AsyncIterable<DeliveredFrame | SupersededFrame | SegmentEnd> {
    assertRunId(runId)
    const after = options.after
    const start = typeof after === 'object' ? after : parseCursor(after)
    return follow(runId, start, this.#tail, this.#reads, this.#reading(options.signal), {
      segments: true,
      superseded: options.superseded,
    })
  }

  /**
   * Whether `cursor` is past the stream's stored head: after its last row, or inside its last
   * text row beyond the text stored. Every cursor a reader was given names a committed
   * position (persist, then publish), so such a cursor was never given by any replica. A
   * stream that does not exist has no position past its start. Its read is retried through a
   * database outage (up to `outageBoundMs`), as a reader's are.
   *
   * `known`: the stream's row as the caller just read it; the last row is then read only when
   * the cursor names the stream's last row while the stream is open (its text may still grow).
   * A stream that is not open ends with its end marker, at `lastSeq`.
   */
  beyondHead(
    runId: string,
    cursor: Cursor,
    known?: Pick<StreamHead, 'lastSeq' | 'status'>
  ): Promise<boolean> {
    return beyondHead(this.#reads, runId, cursor, known, { boundMs: this.options.outageBoundMs })
  }

  /**
   * The position after everything stored of a stream (see `beyondHead`: a cursor after it was
   * never given), `null` when it has no row. Retried through a database outage.
   */
  storedHead(runId: string): Promise<Cursor | null> {
    return storedHead(this.#reads, runId, { boundMs: this.options.outageBoundMs })
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

  /**
   * The stored frames of a stream, read in pages: exactly what {@link segments} yields for
   * stored rows (a {@link SegmentEnd} per segment end, superseded components skipped, no
   * partials), from `after` (exclusive) up to and including `until`; a `until` inside a text row
   * (`{ seq, offset }`) cuts that row's text at `offset` UTF-16 units (its cursor `seq.offset`).
   * Ends at the last stored row; never waits. A stream that does not exist yields nothing.
   *
   * @param options.appendedEnds also yield the end markers after frames appended to an ended
   *   stream, as `{ t: 'end', cursor, appended: true }`
   * @param options.superseded also yield superseded components, flagged `superseded: true`
   * @param options.growing for a reader serving a client: the first read takes
   *   `DEFAULTS.firstPageSize` rows, each next one twice as many up to `pageSize` (its first
   *   frame comes fast; one that goes away leaves little read for nothing), and the next page is
   *   read while one is handed on (each page then holds half of `readerBytes`; not on SQLite,
   *   whose driver is synchronous)
   * @param options.signal once it aborts, no more reads start (the replay ends)
   * @throws InvalidRunIdError, InvalidCursorError (a malformed `after` string)
   */
  replay(
    runId: string,
    options: {
      after?: string | Cursor
      until?: Cursor
      appendedEnds?: boolean
      superseded?: boolean
      growing?: boolean
      signal?: AbortSignal
    } = {}
  ): AsyncIterable<DeliveredFrame | SupersededFrame | SegmentEnd> {
    assertRunId(runId)
    const after = typeof options.after === 'object' ? options.after : parseCursor(options.after)
    return replayStored(this.#reads, runId, {
      after,
      until: options.until,
      ...this.#limits,
      firstPageSize: options.growing ? DEFAULTS.firstPageSize : undefined,
      // A synchronous driver (better-sqlite3) cannot overlap reads with anything.
      prefetch: options.growing && !this.#store.dialect.includes('sqlite'),
      stopped: () => this.#stopped || options.signal?.aborted === true,
      appendedEnds: options.appendedEnds,
      superseded: options.superseded,
      outageBoundMs: this.options.outageBoundMs,
    })
  }

  /**
   * A stream's raw stored rows in seq order, in pages (`agent-stream:inspect`); `fromSeq`/`toSeq`
   * inclusive. @throws InvalidRunIdError
   */
  storedRows(
    runId: string,
    options: { fromSeq?: number; toSeq?: number } = {}
  ): AsyncIterable<StoredRow[]> {
    assertRunId(runId)
    return storedRows(this.#reads, runId, { ...options, ...this.#limits })
  }

  /** Seq of the first segment end after `afterSeq` (where that segment ended), or `null`. */
  segmentEnd(runId: string, afterSeq: number): Promise<number | null> {
    return this.#reads.segmentEnd(runId, afterSeq)
  }

  /** The stream's row (status, last seq, rev, lease; epoch ms), or `null` (none, or purged). */
  head(runId: string) {
    return this.#reads.head(runId)
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

  /** Whether the sink holds a stream for the run (open, ended or failed, and not purged). */
  async has(runId: string): Promise<boolean> {
    if (!RUN_ID.test(runId)) return false
    return this.#reads.exists(runId)
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
    this.#stopped = true
    for (const writer of [...this.#writers]) writer.shutdown()
    await this.#tail.close()
    await this.#closeNotifier?.().catch(() => {})
  }

  /** How a reader reads: its limits, its signal, and how long it rides out an outage. */
  #reading(signal?: AbortSignal) {
    return { ...this.#limits, signal, outageBoundMs: this.options.outageBoundMs }
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

function assertRunId(runId: string) {
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) throw new InvalidRunIdError()
}

/**
 * The sink's internals (its store, reads, tail and client) for the package's own layers and
 * tests: package-internal, never exported from the package's root (`index.ts`).
 */
export function sinkInternals(sink: LucidTokenStreamSink): SinkInternals {
  return internalsOf(sink)
}

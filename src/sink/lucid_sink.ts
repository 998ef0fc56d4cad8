import type { Database } from '@adonisjs/lucid/database'
import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { InvalidRunIdError } from '../errors.js'
import { isLockConflict, isRefusal, isTransientError } from '../store/transient.js'
import { Tail } from '../follow/tail.js'
import { tableNames, type TableNames } from '../store/schema.js'
import type { AppendPlan, CommitResult } from '../store/append_plan.js'
import type { StoredRow, StreamHead } from '../store/rows.js'
import { StreamReads } from '../store/stream_reads.js'
import { StreamStore } from '../store/stream_store.js'
import { parseCursor, type Cursor } from '../core/cursor.js'
import { RUN_ID, type DeliveredFrame, type StreamFrame } from '../core/frames.js'
import { DEFAULTS } from '../defaults.js'
import type { TokenStreamSink } from './spi.js'
import { follow, RUN_FAILED_MESSAGE, type SegmentEnd } from './subscriber.js'
import { appendFrames, type AppendContext } from './append.js'
import { beyondHead, replayStored, storedRows, type SupersededFrame } from './read_path.js'
import { purgeEnded, type PurgeOptions } from './purge.js'
import { LucidSinkWriter, type ParkHook } from './writer.js'
import { ClockWatch } from './clock_watch.js'
import { StopWatch } from './stop_watch.js'
import { StopRequests } from '../store/stop_requests.js'
import type { RunMeta } from '../core/run.js'
import {
  resolveSinkOptions,
  type LucidSinkOptions,
  type ResolvedSinkOptions,
  type SubscribeOptions,
} from './sink_options.js'

export type { LucidSinkOptions, SubscribeOptions } from './sink_options.js'

/**
 * What the package's own layers (parking, the doors, the runner, the admin console, the
 * commands) and its tests reach of a sink besides its public face, through
 * {@link sinkInternals}. Not part of the package's public face: `index.ts` never exports it.
 */
export interface SinkInternals {
  /** The writes of streams (and the connection). */
  readonly store: StreamStore
  /** The reads of streams. */
  readonly reads: StreamReads
  /** This replica's tail reader (feeds, notifiers, `observe`). */
  readonly tail: Tail
  /** The Lucid client the tables live on, opened on first use (parking and door rows share it). */
  readonly client: QueryClientContract
  /** The watch on the database's clock (read before the first write, and at every sweep). */
  readonly clock: ClockWatch
  /** Stops: recorded in the streams row (`StopRequests`), heard by the writer's replica (`StopWatch`). */
  readonly stops: StopWatch
}

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
    const { connection, resolved, notifier } = resolveSinkOptions(db, options)
    this.options = resolved
    this.tables = tableNames(options.tables)
    this.#park = options.park
    this.#continueLapsed = options.continueLapsed
    this.#onError = options.onError
    this.#closeNotifier = notifier.close
    const store = new StreamStore(
      () => db.connection(connection),
      this.tables,
      notifier.notifyChannel,
      notifier.publish,
      resolved.groupCommit ? DEFAULTS.groupCommitMembers : 0
    )
    const reads = new StreamReads(() => store.client, this.tables)
    const tail = new Tail(reads, notifier.notifiers, {
      windowSize: resolved.windowSize,
      windowBytes: resolved.windowBytes,
      pageSize: resolved.pageSize,
      onLapsed: (runId) => this.settleLapsed(runId),
      lapseGraceMs: resolved.leaseMs,
      clock: () => this.#clock.ready(),
    })
    this.#store = store
    this.#reads = reads
    this.#tail = tail
    this.#clock = new ClockWatch(() => store.client, options.onError)
    const stopRequests = new StopRequests(
      () => store.client,
      this.tables,
      () => ({
        channel: store.notifyChannel,
        committed: store.committed,
      })
    )
    this.#internals = {
      store,
      reads,
      tail,
      clock: this.#clock,
      stops: new StopWatch(stopRequests, tail, resolved.pollIntervalMs, options.onError),
      get client() {
        return store.client
      },
    }
    this.#append = { store, tail, maxFrameBytes: resolved.maxFrameBytes }
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
    assertRunId(runId)
    // The lease is in the database's time: its clock is read before the first one is written.
    await this.#clock.ready()
    const recorded = segment === undefined ? undefined : JSON.stringify(segment)
    const { lastSeq, epoch } = await this.#store.open(runId, this.options.leaseMs, within, recorded)
    return this.#writer(runId, meta, lastSeq, epoch)
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
    let segment: unknown = null
    const result = await appendFrames(this.#append, runId, {
      frames,
      onlyIfLeaseLapsed: true,
      takeOver: true,
      leaseMs: this.options.leaseMs,
      within: async (trx) => {
        const row = await trx
          .from(this.tables.streams)
          .select('segment')
          .where('run_id', runId)
          .first()
        segment = JSON.parse(row.segment)
      },
    })
    if (!result || result.epoch === undefined) return null
    const lastSeq = result.rows.at(-1)?.seq ?? result.before
    return { writer: this.#writer(runId, meta(segment), lastSeq, result.epoch), segment }
  }

  #writer(
    runId: string,
    meta: Partial<Omit<RunMeta, 'streamRunId'>>,
    lastSeq: number,
    epoch: number
  ): LucidSinkWriter {
    const writer = new LucidSinkWriter(runId, this.#append, {
      coalesceWindowMs: this.options.coalesceWindowMs,
      maxTextRowChars: this.options.maxTextRowChars,
      maxFrameBytes: this.options.maxFrameBytes,
      leaseMs: this.options.leaseMs,
      outageBoundMs: this.options.outageBoundMs,
      outageBufferBytes: this.options.outageBufferBytes,
      openedAtSeq: lastSeq,
      epoch,
      onError: this.#onError,
      park: this.#park,
      meta: {
        runId: meta.runId ?? runId,
        streamRunId: runId,
        threadId: meta.threadId ?? runId,
        parentRunId: meta.parentRunId ?? null,
        principal: meta.principal ?? null,
      },
    })
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
   * The raw stored rows of a stream, in seq order, in pages (for tools that show rows as stored,
   * such as `agent-stream:inspect`). `fromSeq`/`toSeq` are inclusive.
   *
   * @throws InvalidRunIdError
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

  /**
   * The stream's row (status, last seq, rev, lease; times in epoch milliseconds), or `null` when
   * the stream does not exist (never opened, or purged).
   */
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
   * Delete streams that ended (or failed) more than `ttlMs` ago, with everything they owned:
   * frames, stored translator checkpoints, parks (the sub-agents' too), approvals, question sets
   * and the doors' run rows (`store/purge_rows.ts`). In batches: at most `batchSize` streams per
   * transaction (default `DEFAULTS.purgeBatch`), a handful of statements each, so no table is
   * held for long. Then rows such a stream owned that outlived it (an earlier release's purge, a
   * close), created before the cutoff and at least `DEFAULTS.orphanGraceMs` ago, and checkpoints
   * left without their stream. Open streams, and the stream of a parked run, are never purged.
   * Readers still attached to a purged stream end.
   *
   * @returns the number of streams removed (with `dryRun`: that would be, nothing deleted)
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

  /**
   * A stream whose writer's lease lapsed: continued on this replica when its segment can be
   * (`continueLapsed`), else failed: an `error` frame and the end, exactly once (nothing when
   * the lease holds again: another replica took it over).
   */
  async settleLapsed(runId: string) {
    await this.#clock.ready()
    try {
      if (await this.#continueLapsed?.(runId)) return
    } catch (error) {
      // The database away or a lock conflict: the next poll or sweep tries again (failing the run
      // now would lose a segment another try may continue).
      if (isTransientError(error) || isLockConflict(error)) throw error
      this.#onError?.(error)
    }
    // Someone stopped it before its writer died: it ends as the stop asked, not as a failure.
    const state = await this.#internals.stops.requests.state(runId)
    const stopped = state?.stopMode
    try {
      await this.append(runId, {
        frames: [
          stopped
            ? { t: 'event', event: { kind: 'cancelled' } }
            : { t: 'error', code: 'run_failed', message: RUN_FAILED_MESSAGE },
        ],
        end: stopped ? 'ended' : 'failed',
        onlyIfLeaseLapsed: true,
      })
    } catch (error) {
      // Its writes are refused: no replica takes it over again (its readers are told from memory).
      if (isRefusal(error)) await this.#store.dropSegment(runId).catch(() => {})
      throw error
    }
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

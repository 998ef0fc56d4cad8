import type { Tail } from '../follow/tail.js'
import type { TableNames } from '../store/schema.js'
import type { StoredRow, StreamHead } from '../store/rows.js'
import type { StreamReads } from '../store/stream_reads.js'
import { parseCursor, type Cursor } from '../core/cursor.js'
import { RUN_ID, type DeliveredFrame } from '../core/frames.js'
import { InvalidRunIdError } from '../errors.js'
import { DEFAULTS } from '../defaults.js'
import { follow, type SegmentEnd } from './subscriber.js'
import { PrimedFollow } from './primed_follow.js'
import {
  beyondHead,
  replayStored,
  storedHead,
  storedRows,
  type SupersededFrame,
} from './read_path.js'
import type { ResolvedSinkOptions, SubscribeOptions } from './sink_options.js'

/** What the read face of a sink is built on (`sink_assembly.ts` makes them). */
export interface SinkReadParts {
  resolved: ResolvedSinkOptions
  tables: TableNames
  reads: StreamReads
  tail: Tail
  /**
   * The connection's dialect (a synchronous driver reads no page ahead), asked when a replay
   * needs it: asking opens the connection, which a sink nobody reads never does.
   */
  dialect: () => string
}

/**
 * The read face of the Lucid sink (`LucidTokenStreamSink` extends it): subscribe and follow,
 * segments, stored replays, the stored head. Every read takes the sink's page limits and rides
 * out a database outage up to `outageBoundMs`; once the sink shuts down no read starts.
 */
export abstract class LucidSinkReads {
  /** The options, every default applied. */
  readonly options: ResolvedSinkOptions
  /** The package's table names. */
  readonly tables: TableNames
  #reads: StreamReads
  #tail: Tail
  #dialect: () => string
  #stopped = false

  constructor(parts: SinkReadParts) {
    this.options = parts.resolved
    this.tables = parts.tables
    this.#reads = parts.reads
    this.#tail = parts.tail
    this.#dialect = parts.dialect
  }

  /** No read starts after this (a reader mid-replay starts none on a database about to close). */
  protected stopReads() {
    this.#stopped = true
  }

  /** What one reader reads at a time: rows, and UTF-8 bytes (`readerBytes`). */
  get #limits() {
    return { pageSize: this.options.pageSize, pageBytes: this.options.readerBytes }
  }

  /** How a reader reads: its limits, its signal, and how long it rides out an outage. */
  #reading(signal?: AbortSignal) {
    return { ...this.#limits, signal, outageBoundMs: this.options.outageBoundMs }
  }

  /** The stream's row (status, last seq, rev, lease; epoch ms), or `null` (none, or purged). */
  head(runId: string) {
    return this.#reads.head(runId)
  }

  /** Whether the sink holds a stream for the run (open, ended or failed, and not purged). */
  async has(runId: string): Promise<boolean> {
    if (!RUN_ID.test(runId)) return false
    return this.#reads.exists(runId)
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
      primed?: PrimedFollow
    } = {}
  ): AsyncIterable<DeliveredFrame | SupersededFrame | SegmentEnd> {
    assertRunId(runId)
    const after = options.after
    const start = typeof after === 'object' ? after : parseCursor(after)
    const reading = this.#reading(options.signal)
    const items = { segments: true, superseded: options.superseded }
    return follow(runId, start, this.#tail, this.#reads, reading, items, options.primed)
  }

  /**
   * Start the first reads of a follow of `runId` from `after` now (the stream's feed, the first
   * page after the cursor), for a {@link segments} given it (`primed`) later: what a door's
   * re-attach does before it rebuilds its translator, so its first event does not wait for a
   * read of its own after that. Release what is not given to a follow (`release()`; it lets go
   * on its own after a while too).
   */
  prime(runId: string, after: Cursor, signal?: AbortSignal): PrimedFollow {
    assertRunId(runId)
    const retry = { boundMs: this.options.outageBoundMs, signal }
    return new PrimedFollow(runId, after, this.#tail, this.#reads, this.#limits, retry)
  }

  /**
   * Whether a reader of the stream at `cursor` has caught up with this replica's tail: it is
   * served from the replica's feed of the stream (held in memory), not from store pages: where a
   * lone live viewer opens its door's shared fan-out (`src/door/live_hub.ts`).
   */
  caughtUp(runId: string, cursor: Cursor): boolean {
    return this.#tail.holds(runId, cursor)
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
      prefetch: options.growing && !this.#dialect().includes('sqlite'),
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
}

export function assertRunId(runId: string) {
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) throw new InvalidRunIdError()
}

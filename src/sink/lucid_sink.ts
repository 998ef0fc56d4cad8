import type { Database } from '@adonisjs/lucid/database'
import { DateTime } from 'luxon'
import { InvalidRunIdError } from '../errors.js'
import type { Notifier } from '../follow/notifiers/notifier.js'
import { PgNotifier } from '../follow/notifiers/pg.js'
import { Tail } from '../follow/tail.js'
import { tableNames, type TableNames } from '../store/schema.js'
import { StreamStore } from '../store/stream_store.js'
import { parseCursor } from '../core/cursor.js'
import { RUN_ID, type DeliveredFrame } from '../core/frames.js'
import type { TokenStreamSink } from './spi.js'
import { follow, RUN_FAILED_MESSAGE, type SegmentEnd } from './subscriber.js'
import { DEFAULT_MAX_FRAME_BYTES } from './validate.js'
import { LucidSinkWriter, type ParkHook } from './writer.js'
import type { RunMeta } from '../core/run.js'

/** Options of {@link LucidTokenStreamSink}. Every duration is in milliseconds. */
export interface LucidSinkOptions {
  /** Lucid connection name; the default connection when absent. */
  connection?: string
  /** Table names (defaults: `agent_streams`, `agent_stream_frames`). */
  tables?: Partial<TableNames>
  /** Longest time text is held back to coalesce. Default 40. */
  coalesceWindowMs?: number
  /** A text row stops growing past this many UTF-16 code units. Default 16384. */
  maxTextRowChars?: number
  /** Cap on one frame's serialized size, in bytes. Default 262144 (256 KiB). */
  maxFrameBytes?: number
  /** A writer's lease: a writer silent this long (crashed, killed) has its stream failed. Default 15000. */
  leaseMs?: number
  /**
   * Cross-replica wake-ups: `'auto'` (LISTEN/NOTIFY on PostgreSQL, polling elsewhere), `'notify'`
   * (PostgreSQL only), `'poll'`. Default `'auto'`.
   */
  notifier?: 'auto' | 'notify' | 'poll'
  /** NOTIFY channel. Default `agent_stream`. */
  notifyChannel?: string
  /**
   * Poll of followed streams' heads, one query per replica for all of them. Default 100 when
   * polling is the only cross-replica wake-up, 1000 as the safety net beside NOTIFY. Same-replica
   * readers never wait for it.
   */
  pollIntervalMs?: number
  /** Time an ended stream is kept before `purge()` removes it. Default 86400000 (24 h). */
  ttlMs?: number
  /** Deliveries kept in memory per followed stream for readers that keep up. Default 512. */
  windowSize?: number
  /** Rows per store read. Default 500. */
  pageSize?: number
  /** Told about background failures (listener drops, lease sweeps); the sink keeps going. */
  onError?: (error: unknown) => void
  /** Parks approvals and elicitations in the frame's transaction (set by the parking layer). */
  park?: ParkHook
}

export interface SubscribeOptions {
  /** Cursor of the last frame the reader has (the SSE `Last-Event-ID`); absent = from the start. */
  after?: string
  /** Stops the subscription (an HTTP client that disconnected): the iterator ends at once. */
  signal?: AbortSignal
}

/**
 * The Lucid `TokenStreamSink` (sink-spi.md): frames stored in SQL, consecutive text coalesced into
 * one row, any number of readers on any replica replaying from a cursor and then following live.
 *
 * Invariants (DESIGN.md section 4): persist then publish; no gap and no duplicate from any
 * cursor; seq gap-free and commit-ordered per stream; a stream always ends (a dead writer's lease
 * lapses and its readers get an `error` frame `run_failed`).
 *
 * Timers and the LISTEN connection start with the first reader and stop with the last one, so a
 * sink that nobody reads (warmup, a console command) holds no resources.
 */
export class LucidTokenStreamSink implements TokenStreamSink {
  readonly store: StreamStore
  readonly tail: Tail
  readonly options: Required<Omit<LucidSinkOptions, 'connection' | 'tables' | 'onError' | 'park'>>
  readonly tables: TableNames
  #park: ParkHook | undefined
  #writers = new Set<LucidSinkWriter>()

  constructor(
    readonly db: Database,
    options: LucidSinkOptions = {}
  ) {
    const name = options.connection ?? db.primaryConnectionName
    const node = db.manager.get(name)
    if (!node) throw new Error(`agent-stream: unknown Lucid connection "${name}"`)
    const postgres = ['pg', 'postgres', 'postgresql'].includes(node.config.client as string)
    const mode = options.notifier ?? 'auto'
    if (mode === 'notify' && !postgres) {
      throw new Error('notifier "notify" needs a PostgreSQL connection; use "auto" or "poll"')
    }
    const notify = postgres && mode !== 'poll'
    this.options = {
      coalesceWindowMs: options.coalesceWindowMs ?? 40,
      maxTextRowChars: options.maxTextRowChars ?? 16384,
      maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      leaseMs: options.leaseMs ?? 15_000,
      notifier: mode,
      notifyChannel: options.notifyChannel ?? 'agent_stream',
      pollIntervalMs: options.pollIntervalMs ?? (notify ? 1000 : 100),
      ttlMs: options.ttlMs ?? 86_400_000,
      windowSize: options.windowSize ?? 512,
      // A page holds the cursor's own row too: two rows is the least that makes progress.
      pageSize: Math.max(2, options.pageSize ?? 500),
    }
    this.tables = tableNames(options.tables)
    this.#park = options.park
    this.store = new StreamStore(
      () => db.connection(name),
      this.tables,
      notify ? this.options.notifyChannel : null
    )
    const notifier: Notifier | null = notify
      ? new PgNotifier({
          channel: this.options.notifyChannel,
          onError: options.onError,
          connect: async () => {
            const { default: pg } = await import('pg')
            const connection = node.config.connection as string | Record<string, unknown>
            // Named, so an operator (or a test) can tell the listener from pooled connections.
            const applicationName = `agent-stream-listen-${process.pid}`
            return new pg.Client(
              typeof connection === 'string'
                ? { connectionString: connection, application_name: applicationName }
                : ({ ...connection, application_name: applicationName } as any)
            )
          },
        })
      : null
    this.tail = new Tail(this.store, notifier, {
      pollIntervalMs: this.options.pollIntervalMs,
      windowSize: this.options.windowSize,
      pageSize: this.options.pageSize,
      onLapsed: (runId) => this.#failLapsed(runId),
    })
  }

  /**
   * Open, or reopen, the writer for a run. A reopened stream (ended, or failed) continues its
   * sequence; several writers (a parent and its children, in any process) may hold one stream.
   *
   * @param meta the run that writes, when it is not the stream's own run (a delegated child), and
   *   the thread and principal parking rows record
   * @throws InvalidRunIdError for an id outside `[A-Za-z0-9_:.-]{1,191}`
   */
  async open(
    runId: string,
    meta: Partial<Omit<RunMeta, 'streamRunId'>> = {}
  ): Promise<LucidSinkWriter> {
    assertRunId(runId)
    await this.store.open(runId, this.options.leaseMs)
    const writer = new LucidSinkWriter(runId, this.store, this.tail, {
      coalesceWindowMs: this.options.coalesceWindowMs,
      maxTextRowChars: this.options.maxTextRowChars,
      maxFrameBytes: this.options.maxFrameBytes,
      leaseMs: this.options.leaseMs,
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
    this.tail.wake(runId)
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
      this.tail,
      this.store,
      this.options.pageSize,
      options.signal
    ) as AsyncIterable<DeliveredFrame>
  }

  /**
   * Like {@link subscribe}, with the end of every segment (a park) marked by a
   * {@link SegmentEnd}: what a door needs to end one protocol run per segment.
   *
   * @throws InvalidRunIdError, InvalidCursorError
   */
  segments(
    runId: string,
    options: SubscribeOptions = {}
  ): AsyncIterable<DeliveredFrame | SegmentEnd> {
    assertRunId(runId)
    const start = parseCursor(options.after)
    return follow(runId, start, this.tail, this.store, this.options.pageSize, options.signal, true)
  }

  /** Drop the run's stream: its rows are deleted and its readers end. */
  async close(runId: string): Promise<void> {
    assertRunId(runId)
    for (const writer of [...this.#writers]) {
      if (writer.runId === runId) writer.release()
    }
    await this.store.remove(runId)
    this.tail.wake(runId)
    await this.tail.poll()
  }

  /** Whether the sink holds a stream for the run (open, ended or failed, and not purged). */
  async has(runId: string): Promise<boolean> {
    if (!RUN_ID.test(runId)) return false
    return this.store.exists(runId)
  }

  /**
   * Delete streams that ended (or failed) more than `ttlMs` ago, in batches. Open streams are
   * never purged. Readers still attached to a purged stream end.
   *
   * @returns the number of streams removed
   */
  async purge(options: { olderThanMs?: number; dryRun?: boolean; batchSize?: number } = {}) {
    const endedBefore = DateTime.now().toMillis() - (options.olderThanMs ?? this.options.ttlMs)
    const batch = options.batchSize ?? 500
    if (options.dryRun) {
      const due = await this.store.purgeable(endedBefore, Number.MAX_SAFE_INTEGER)
      return due.length
    }
    let removed = 0
    while (true) {
      const runIds = await this.store.purgeable(endedBefore, batch)
      for (const runId of runIds) {
        // Re-checked in the delete: a stream reopened meanwhile is kept.
        if (await this.store.remove(runId, endedBefore)) removed++
      }
      if (runIds.length < batch) break
    }
    if (removed > 0 && this.tail.followed > 0) await this.tail.poll()
    return removed
  }

  /** Stop timers and the LISTEN connection; open writers stop renewing their lease. */
  async shutdown() {
    for (const writer of [...this.#writers]) writer.release()
    await this.tail.close()
  }

  /** Fail a stream whose writer's lease lapsed: an `error` frame and the end, exactly once. */
  async #failLapsed(runId: string) {
    const result = await this.store.commit(runId, {
      rows: [
        {
          kind: 'error',
          body: JSON.stringify({ t: 'error', code: 'run_failed', message: RUN_FAILED_MESSAGE }),
        },
        { kind: 'end', body: '' },
      ],
      endStatus: 'failed',
      onlyIfLeaseLapsed: true,
    })
    if (result) this.tail.committed(runId, result)
  }
}

function assertRunId(runId: string) {
  if (typeof runId !== 'string' || !RUN_ID.test(runId)) throw new InvalidRunIdError()
}

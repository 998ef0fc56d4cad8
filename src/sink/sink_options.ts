import type { TableNames } from '../store/schema.js'
import type { NotifierChoice } from '../follow/notifiers/index.js'
import type { ParkHook } from './writer_options.js'

/** Options of `LucidTokenStreamSink`. Every duration is in milliseconds. */
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
   * How long a run in flight, and a reader, survive the database being unreachable (a restart,
   * a failover): writers hold frames in memory and retry, readers retry their reads. Past it the
   * run fails (an `error` frame `run_failed` and the end, written once the database is back).
   * Default 30000.
   */
  outageBoundMs?: number
  /** Most bytes (UTF-8) of frames one writer holds in memory during an outage. Default 4 MiB. */
  outageBufferBytes?: number
  /**
   * Cross-replica wake-ups: a factory (`notifiers.pg()`, `notifiers.redis()`, `notifiers.poll()`
   * from `follow/notifiers`), or `'auto'` (LISTEN/NOTIFY on PostgreSQL, polling elsewhere),
   * `'notify'` (PostgreSQL only), `'poll'`. Default `'auto'`.
   */
  notifier?: NotifierChoice
  /** NOTIFY channel (and the Redis channel, unless `notifiers.redis()` names one). Default `agent_stream`. */
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
  /**
   * The same window's most in UTF-8 bytes (its one newest delivery whatever its size); also the
   * most one tail read brings in. Default 1048576 (1 MiB).
   */
  windowBytes?: number
  /** Rows per store read. Default 500. */
  pageSize?: number
  /**
   * UTF-8 bytes of frames held in memory for one reader and not yet handed on (a store page or a
   * batch from the window; one frame when a frame is larger). Default 1048576 (1 MiB).
   */
  readerBytes?: number
  /**
   * Group commit: the plain appends of this replica's writers (held text, events, end markers)
   * that are due at the same time ride in one transaction for all their streams, one group in
   * flight at a time, each stream keeping its own seq, order and outcome. `false`: one
   * transaction per append. Default true.
   */
  groupCommit?: boolean
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

import type { Database } from '@adonisjs/lucid/database'
import type { TableNames } from '../store/schema.js'
import { notifierFactory, type NotifierChoice } from '../follow/notifiers/index.js'
import type { NotifierSetup } from '../follow/notifiers/notifier.js'
import { DEFAULTS } from '../defaults.js'
import type { ParkHook } from './writer_options.js'
import type { LifecycleRecorder } from '../core/lifecycle.js'

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
  /**
   * Cap on the agent's state (`state` event frames: a snapshot, or the state a delta leaves) and
   * on the page's state a door takes (`RunAgentInput.state`, useChat's body `state`), in bytes of
   * JSON. Default 65536 (64 KiB).
   */
  maxStateBytes?: number
  /**
   * A writer's lease: a writer silent this long (crashed, killed) has its segment continued by
   * another replica (`continueLapsed`) or its stream failed. Default 15000.
   */
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
  /**
   * Told, in one line, that a failure warned about through `onError` is over (the Redis
   * notifier's outage). The AdonisJS provider logs it at `info`.
   */
  onInfo?: (message: string) => void
  /** Parks approvals and elicitations in the frame's transaction (set by the parking layer). */
  park?: ParkHook
  /**
   * Offered every stream whose writer's lease lapsed before it is failed (set by the run
   * driver): resolves true when this replica took the segment over and continues it (the
   * stream is then not failed).
   */
  continueLapsed?: (runId: string) => Promise<boolean>
  /**
   * Where lifecycle events (a run started, parked, ended ...) are recorded, in the transaction
   * of the change each reports: the webhook outbox (`createRuntime`'s `webhooks`). Default: none.
   */
  lifecycle?: LifecycleRecorder
}

/** A sink's options with every default applied (`LucidTokenStreamSink.options`). */
export type ResolvedSinkOptions = Required<
  Omit<
    LucidSinkOptions,
    'connection' | 'tables' | 'onError' | 'onInfo' | 'park' | 'continueLapsed' | 'lifecycle'
  >
>

/**
 * Resolve a sink's options against its Lucid database: the connection (by name), its notifiers
 * (set up from `notifier`, PostgreSQL or not) and every default.
 *
 * @throws Error for an unknown connection, or a `windowBytes`/`readerBytes` that is not an
 *   integer >= 1
 */
export function resolveSinkOptions(
  db: Database,
  options: LucidSinkOptions
): { connection: string; resolved: ResolvedSinkOptions; notifier: NotifierSetup } {
  const connection = options.connection ?? db.primaryConnectionName
  const node = db.manager.get(connection)
  if (!node) throw new Error(`agent-stream: unknown Lucid connection "${connection}"`)
  const client = node.config.client as string
  const postgres = ['pg', 'postgres', 'postgresql'].includes(client)
  const choice = options.notifier ?? 'auto'
  const notifier = notifierFactory(choice, postgres).create({
    client,
    postgres,
    connection: node.config.connection,
    pollIntervalMs: options.pollIntervalMs,
    notifyChannel: options.notifyChannel,
    onError: options.onError,
    onInfo: options.onInfo,
  })
  const resolved: ResolvedSinkOptions = {
    coalesceWindowMs: options.coalesceWindowMs ?? DEFAULTS.coalesceWindowMs,
    maxTextRowChars: options.maxTextRowChars ?? DEFAULTS.maxTextRowChars,
    maxFrameBytes: options.maxFrameBytes ?? DEFAULTS.maxFrameBytes,
    maxStateBytes: options.maxStateBytes ?? DEFAULTS.maxStateBytes,
    leaseMs: options.leaseMs ?? DEFAULTS.leaseMs,
    outageBoundMs: options.outageBoundMs ?? DEFAULTS.outageBoundMs,
    outageBufferBytes: options.outageBufferBytes ?? DEFAULTS.outageBufferBytes,
    notifier: choice,
    notifyChannel: notifier.notifyChannel ?? options.notifyChannel ?? DEFAULTS.notifyChannel,
    pollIntervalMs: notifier.pollIntervalMs,
    ttlMs: options.ttlMs ?? DEFAULTS.ttlMs,
    windowSize: options.windowSize ?? DEFAULTS.windowSize,
    windowBytes: options.windowBytes ?? DEFAULTS.windowBytes,
    readerBytes: options.readerBytes ?? DEFAULTS.readerBytes,
    // A page holds the cursor's own row too: two rows is the least that makes progress.
    pageSize: Math.max(2, options.pageSize ?? DEFAULTS.pageSize),
    groupCommit: options.groupCommit ?? true,
  }
  for (const budget of ['windowBytes', 'readerBytes'] as const) {
    if (!Number.isSafeInteger(resolved[budget]) || resolved[budget] < 1)
      throw new Error(`agent-stream: "${budget}" must be an integer >= 1`)
  }
  return { connection, resolved, notifier }
}

/** How a reader subscribes: from a cursor, until a signal aborts. */
export interface SubscribeOptions {
  /** Cursor of the last frame the reader has (the SSE `Last-Event-ID`); absent = from the start. */
  after?: string
  /** Stops the subscription (an HTTP client that disconnected): the iterator ends at once. */
  signal?: AbortSignal
}

import type { Database } from '@adonisjs/lucid/database'
import type { Logger } from '@adonisjs/core/logger'
import type { ResolvedAgentStreamConfig } from './define_config.js'
import { sinkInternals, type LucidTokenStreamSink } from './sink/lucid_sink.js'
import type { Webhooks } from './telemetry/webhooks/index.js'
import { createRuntime } from './runtime.js'
import type { Parking } from './parking/parking.js'
import type { RunDriver } from './runner/driver.js'
import type { RunControl } from './runner/run_control.js'
import type { AgentRunner } from './runner/contract.js'
import type { AgUiDoor } from './agui/door/index.js'
import { AdonisDoorAdapter } from './http/adonis_adapter.js'
import type { UiMessageDoor } from './ui_message/door/index.js'
import { registerRoutes, type RoutesOptions } from './http/routes.js'
import type { Router, RouteGroup } from '@adonisjs/core/http'
import { DEFAULTS } from './defaults.js'
import { isLockConflict } from './store/transient.js'
import { ClockSkewError, StoreUnavailableError } from './errors.js'
import { PurgeSchedule } from './sink/purge_schedule.js'
import { recordedPurge } from './sink/purge_record.js'
import { PurgeRuns } from './store/purge_runs.js'

/**
 * What the package tells the app's logger from the background: a clock skew as a warning with
 * the skew measured; a run stopped because the database refused its writes as an error (never
 * retried); anything else as a warning (it is retried).
 */
function logBackground(logger: Logger | undefined, error: unknown) {
  if (error instanceof ClockSkewError) {
    logger?.warn({ skewMs: error.skewMs }, `agent-stream: ${error.message}`)
  } else if (error instanceof StoreUnavailableError && error.reason === 'refused') {
    logger?.error({ err: error.cause }, `agent-stream: ${error.message}`)
  } else if (isLockConflict(error)) {
    // A lock conflict (a deadlock, a serialization failure) is concurrency, not a failure: the
    // work is run again (its transaction, or the sweeper's next round).
    logger?.debug({ err: error }, 'agent-stream: lock conflict, retrying')
  } else {
    logger?.warn({ err: error }, 'agent-stream: background failure, retrying')
  }
}

/** Used when the config names no runner: every run fails with a fixed sentence. */
const NO_RUNNER: AgentRunner = {
  start: async () => ({ status: 'failed' }),
  resume: async () => ({ status: 'failed' }),
}

/**
 * The package's one container singleton (`agentStream`): the Lucid sink, the run driver, parking
 * (decisions, queries, the queue, the sweeper), both doors and their controllers, and the
 * operations the ace commands and the app call.
 */
export class AgentStream {
  readonly sink: LucidTokenStreamSink
  readonly driver: RunDriver
  /** Parking: `decisions`, `queries`, `queue`, `sweeper` and `ready` (see `Parking`). */
  readonly parking: Parking
  /** Run control: stop a talking or parked run from any replica (see `RunControl`). */
  readonly control: RunControl
  /** The AG-UI door (`door` in `createRuntime` too). */
  readonly door: AgUiDoor
  /** The AI SDK UI message stream door, for `useChat` (`uiMessage` in `createRuntime` too). */
  readonly uiMessage: UiMessageDoor
  /**
   * The AdonisJS adapter: serves both doors' route tables on the routes (`registerRoutes`), and
   * ends their open responses on shutdown.
   */
  readonly http: AdonisDoorAdapter
  /** The webhook outbox, its deliverer and rows; `null` without an endpoint (docs/webhooks.md). */
  readonly webhooks: Webhooks | null
  #stopSweeper: (() => void) | null = null
  #drain: () => Promise<void>
  #shutdown: Promise<void> | null = null
  #closing = new AbortController()
  #logger: Logger | undefined

  constructor(
    db: Database,
    readonly config: ResolvedAgentStreamConfig,
    logger?: Logger,
    readonly router?: Router
  ) {
    const stack = createRuntime(db, {
      ...config,
      runner: config.runner ?? NO_RUNNER,
      onError: (error) => logBackground(logger, error),
      onInfo: (message) => logger?.info(message),
    })
    this.#logger = logger
    this.sink = stack.sink
    this.driver = stack.driver
    this.parking = stack.parking
    this.control = stack.control
    this.door = stack.door
    this.uiMessage = stack.uiMessage
    this.http = new AdonisDoorAdapter({
      principal: config.principal,
      heartbeatMs: config.agui.heartbeatMs,
      abortOnDisconnect: config.agui.abortOnDisconnect,
      limits: config.limits,
    })
    this.#drain = stack.drain
    this.webhooks = stack.webhooks
    this.purgeSchedule = config.purge
      ? new PurgeSchedule(
          config.purge,
          (options) => this.sink.purge(options),
          (error) => logBackground(logger, error),
          // Each run's start and end in the database: every process sees the last one.
          new PurgeRuns(() => sinkInternals(this.sink).client, this.sink.tables)
        )
      : null
  }

  /** The background purge (config `purge`), started with the sweeper; `null` when not configured. */
  readonly purgeSchedule: PurgeSchedule | null

  /**
   * Mount the package's routes (`start/routes.ts`): AG-UI, native stream, decisions and the admin
   * page, named and prefixed; `modifier` attaches the app's middleware. See `registerRoutes`.
   *
   * @throws Error when the instance was made without the app's router
   */
  registerRoutes(options: RoutesOptions = {}, modifier?: (group: RouteGroup) => void) {
    if (!this.router)
      throw new Error('agent-stream: registerRoutes needs the app router (use the provider)')
    return registerRoutes(this.router, this, options, modifier)
  }

  /** Start the expiry/resume sweeper (the provider does on `ready`, never in warmup). */
  startSweeper() {
    this.#stopSweeper ??= this.parking.sweeper.start(
      this.config.sweepIntervalMs ?? DEFAULTS.sweepIntervalMs
    )
    // The webhook deliverer runs where the sweeper does (a running app, never warmup).
    this.webhooks?.deliverer.start()
    // And the background purge, when configured (a cron's agent-stream:purge needs no app running).
    this.purgeSchedule?.start()
  }

  /** Whether the sweeper runs. */
  get sweeping() {
    return this.#stopSweeper !== null
  }

  /**
   * Delete streams ended longer ago than the TTL (or `olderThanMs`) with everything they owned,
   * `batchSize` streams per transaction. See `LucidTokenStreamSink.purge`. Its start and end
   * (streams purged, or its error) are stored as the last manual purge, which
   * `agent-stream:inspect --purge` shows from any process; a dry run stores nothing.
   */
  purge(options: { olderThanMs?: number; dryRun?: boolean; batchSize?: number } = {}) {
    if (options.dryRun) return this.sink.purge(options)
    return recordedPurge(
      () => this.sink.purge(options),
      new PurgeRuns(() => sinkInternals(this.sink).client, this.sink.tables, 'manual'),
      // Not stored: the purge goes on (nothing retries the record).
      (error) =>
        this.#logger?.warn({ err: error }, 'agent-stream: the manual purge was not recorded')
    )
  }

  /** Aborted once the shutdown ends open responses (the admin page's events route listens). */
  get closing(): AbortSignal {
    return this.#closing.signal
  }

  /** Whether this replica drains (a graceful shutdown began): it starts and resumes nothing. */
  get draining() {
    return this.driver.draining
  }

  /**
   * A graceful shutdown (the provider's, on `app.terminate()`: SIGTERM). The sweeper stops; new
   * runs and resumes are refused (503 `replica_shutdown`, `Retry-After`; decisions are still
   * recorded, and another replica resumes what they unblock); runs in flight get `shutdown.drain`
   * to finish, then their `signal` aborts and their streams end at once with an `error` frame
   * `replica_shutdown`. Then open SSE responses end after what is stored (their readers
   * re-attach on another replica), and the sink's timers and listeners stop. Parked runs are
   * untouched. Idempotent.
   */
  shutdown() {
    this.#shutdown ??= (async () => {
      this.#stopSweeper?.()
      this.#stopSweeper = null
      // Its batch in flight ends first (the sink's client must outlive it).
      const purgeStopped = this.purgeSchedule?.stop()
      await this.#drain()
      await this.webhooks?.deliverer.stop()
      await purgeStopped
      await this.sink.shutdown()
      this.http.closeAll()
      this.#closing.abort()
    })()
    return this.#shutdown
  }
}

import type { Database } from '@adonisjs/lucid/database'
import type { Logger } from '@adonisjs/core/logger'
import type { ResolvedAgentStreamConfig } from './define_config.js'
import type { LucidTokenStreamSink } from './sink/lucid_sink.js'
import { createRuntime } from './runtime.js'
import type { ParkingService } from './parking/service.js'
import type { RunDriver } from './runner/driver.js'
import type { AgentRunner } from './runner/contract.js'
import type { AgUiDoor } from './agui/door/index.js'
import { AgUiController } from './http/agui_controller.js'
import { UiMessageController } from './http/ui_message_controller.js'
import type { UiMessageDoor } from './ui_message/door/index.js'
import { registerRoutes, type RoutesOptions } from './http/routes.js'
import type { Router, RouteGroup } from '@adonisjs/core/http'
import { DEFAULTS } from './defaults.js'

/** Used when the config names no runner: every run fails with a fixed sentence. */
const NO_RUNNER: AgentRunner = {
  start: async () => ({ status: 'failed' }),
  resume: async () => ({ status: 'failed' }),
}

/**
 * The package's one container singleton (`agentStream`): the Lucid sink, the run driver and the
 * decision service, and the operations the ace commands and the app call.
 */
export class AgentStream {
  readonly sink: LucidTokenStreamSink
  readonly driver: RunDriver
  readonly parking: ParkingService
  /** The AG-UI door and its controller (mounted by the routes). */
  readonly door: AgUiDoor
  readonly agui: AgUiController
  /** The AI SDK UI message stream door (`useChat`) and its controller. */
  readonly uiMessageDoor: UiMessageDoor
  readonly uiMessage: UiMessageController
  #stopSweeper: (() => void) | null = null

  constructor(
    db: Database,
    readonly config: ResolvedAgentStreamConfig,
    logger?: Logger,
    readonly router?: Router
  ) {
    const stack = createRuntime(db, {
      ...config,
      runner: config.runner ?? NO_RUNNER,
      onError: (error) =>
        logger?.warn({ err: error }, 'agent-stream: background failure, retrying'),
    })
    this.sink = stack.sink
    this.driver = stack.driver
    this.parking = stack.service
    this.door = stack.door
    this.agui = new AgUiController(this.door, {
      principal: config.principal,
      heartbeatMs: config.agui.heartbeatMs,
      abortOnDisconnect: config.agui.abortOnDisconnect,
    })
    this.uiMessageDoor = stack.uiMessage
    this.uiMessage = new UiMessageController(this.uiMessageDoor, {
      principal: config.principal,
      heartbeatMs: config.agui.heartbeatMs,
    })
  }

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
    this.#stopSweeper ??= this.parking.startSweeper(
      this.config.sweepIntervalMs ?? DEFAULTS.sweepIntervalMs
    )
  }

  /** Whether the sweeper runs. */
  get sweeping() {
    return this.#stopSweeper !== null
  }

  /**
   * Delete streams ended longer ago than the TTL (or `olderThanMs`) with everything they owned,
   * `batchSize` streams per transaction. See `LucidTokenStreamSink.purge`.
   */
  purge(options?: { olderThanMs?: number; dryRun?: boolean; batchSize?: number }) {
    return this.sink.purge(options)
  }

  /** Stop the sweeper, timers and listeners; end readers. */
  shutdown() {
    this.#stopSweeper?.()
    this.#stopSweeper = null
    this.agui.closeAll()
    this.uiMessage.closeAll()
    return this.sink.shutdown()
  }
}

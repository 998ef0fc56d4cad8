import '../src/types/extended.js'
import { configProvider } from '@adonisjs/core'
import { RuntimeException } from '@adonisjs/core/exceptions'
import type { ApplicationService } from '@adonisjs/core/types'
import type { ResolvedAgentStreamConfig } from '../src/define_config.js'
import type { AgentStream } from '../src/agent_stream.js'

/**
 * Binds the `agentStream` singleton. Nothing opens in register/boot (warmup-safe): the sink opens
 * database connections and timers only when it is first used.
 */
export default class AgentStreamProvider {
  #instance: AgentStream | null = null

  constructor(protected app: ApplicationService) {}

  register() {
    this.app.container.singleton('agentStream', async () => {
      const config = await configProvider.resolve<ResolvedAgentStreamConfig>(
        this.app,
        this.app.config.get('agent_stream', null)
      )
      if (!config) {
        throw new RuntimeException(
          'Invalid "config/agent_stream.ts" file. Make sure you are using the "defineConfig" method'
        )
      }
      // Durable Streams subscriptions sign with the app's key unless the config names a secret.
      const subscriptions = config.durableStreams?.subscriptions
      if (subscriptions && !subscriptions.secret) {
        const appKey = this.app.config.get<{ release?: () => string } | string | undefined>(
          'app.appKey'
        )
        const secret = typeof appKey === 'string' ? appKey : appKey?.release?.()
        if (secret) subscriptions.secret = secret
      }
      const db = await this.app.container.make('lucid.db')
      const logger = await this.app.container.make('logger')
      const router = await this.app.container.make('router')
      const { AgentStream } = await import('../src/agent_stream.js')
      this.#instance = new AgentStream(db, config, logger, router)
      return this.#instance
    })
  }

  /**
   * The package's body guard (`src/http/body_guard.ts`) joins the router middleware here, before
   * the app's `start/kernel.ts` adds the bodyparser, so it sees the package's body routes first:
   * a non-JSON body is refused before it is read, a too-deep body is never deep-cloned. It passes
   * every other route untouched. And the package's answer to the app's own auth and CSRF
   * refusals on its routes (`src/http/host_refusals.ts`): 401 / 403 JSON on the JSON and SSE
   * routes, never a redirect.
   */
  async boot() {
    const router = await this.app.container.make('router')
    router.use([() => import('../src/http/body_guard.js')])
    const { installHostRefusals } = await import('../src/http/host_refusals.js')
    installHostRefusals()
  }

  /**
   * The sweeper (expiry, resumes nobody claimed) and the webhook deliverer run only in a running
   * web (or test) process: never in warmup, nor in an ace command or the REPL (a cron's
   * `agent-stream:purge` starts the app too, and a run it resumed would be cut off when the
   * command exits). A long-running worker command starts them with `agentStream.startSweeper()`.
   *
   * The graceful shutdown (`app.terminate()`, which the app's `bin/server.ts` calls on SIGTERM)
   * starts in a `terminating` hook registered here: registered after the HTTP server's own (core
   * adds it once the server listens) and run in reverse order, it runs first, while the server
   * still answers. The replica drains (see `AgentStream.shutdown`) and its SSE responses end,
   * so the server's close that follows does not wait on them.
   */
  async ready() {
    if (this.app.getMode() === 'warmup') return
    const agentStream = await this.app.container.make('agentStream')
    const environment = this.app.getEnvironment()
    if (environment !== 'console' && environment !== 'repl') agentStream.startSweeper()
    this.app.terminating(() => agentStream.shutdown())
  }

  async shutdown() {
    await this.#instance?.shutdown()
  }
}

import type { Database } from '@adonisjs/lucid/database'
import type { Logger } from '@adonisjs/core/logger'
import type { ResolvedAgentStreamConfig } from './define_config.js'
import { LucidTokenStreamSink } from './sink/lucid_sink.js'

/**
 * The package's one container singleton (`agentStream`): the Lucid sink, and the operations the
 * ace commands and the app call.
 */
export class AgentStream {
  readonly sink: LucidTokenStreamSink

  constructor(db: Database, config: ResolvedAgentStreamConfig, logger?: Logger) {
    this.sink = new LucidTokenStreamSink(db, {
      ...config,
      onError: (error) =>
        logger?.warn({ err: error }, 'agent-stream: background failure, retrying'),
    })
  }

  /** Delete streams ended longer ago than the TTL (or `olderThanMs`). See `LucidTokenStreamSink.purge`. */
  purge(options?: { olderThanMs?: number; dryRun?: boolean }) {
    return this.sink.purge(options)
  }

  /** Stop timers and listeners; end readers. */
  shutdown() {
    return this.sink.shutdown()
  }
}

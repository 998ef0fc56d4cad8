import type { AgentStream } from '../agent_stream.js'

/**
 * The container binding the provider registers: `app.container.make('agentStream')` resolves to
 * the package's one `AgentStream`. Loaded by the provider and by `adonis-agent-stream/types`.
 */
declare module '@adonisjs/core/types' {
  interface ContainerBindings {
    agentStream: AgentStream
  }
}

import type { AgentStream } from '../agent_stream.js'

declare module '@adonisjs/core/types' {
  interface ContainerBindings {
    agentStream: AgentStream
  }
}

import app from '@adonisjs/core/services/app'
import type { AgentStream } from '../src/agent_stream.js'

/**
 * The package's one `AgentStream` (the container's `agentStream` singleton), once the app is
 * booted: `import agentStream from 'adonis-agent-stream/services/main'`.
 */
let agentStream: AgentStream

await app.booted(async () => {
  agentStream = await app.container.make('agentStream')
})

export { agentStream as default }

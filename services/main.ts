import app from '@adonisjs/core/services/app'
import type { AgentStream } from '../src/agent_stream.js'

let agentStream: AgentStream

await app.booted(async () => {
  agentStream = await app.container.make('agentStream')
})

export { agentStream as default }

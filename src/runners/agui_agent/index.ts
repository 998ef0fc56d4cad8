/**
 * `adonis-agent-stream/agui-agent`: any AG-UI agent (`AbstractAgent` of `@ag-ui/client`, an
 * optional peer: an `HttpAgent` pointed at a remote agent in any language, a framework's bridge)
 * as this package's runner (docs/runners/agui_agent.md). Kept off the package root so the root
 * never loads the client.
 */
export { aguiAgent } from './agent.js'
export type { AgUiAgentOptions } from './agent.js'
export type { ApprovalOptions } from './interrupts.js'
export type { AgUiAgentCheckpoint } from './checkpoint.js'

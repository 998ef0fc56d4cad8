/**
 * `adonis-agent-stream/copilotkit`: a CopilotKit agent runner whose memory is the package's
 * store (docs/copilotkit.md): `new CopilotRuntime({ agents, runner: new AgentStreamRunner({ url }) })`.
 * Needs `rxjs` and `@ag-ui/client`, which `@copilotkit/runtime` brings; nothing else of the
 * package is loaded. The request shapes it accepts are CopilotKit's, typed structurally in
 * `runner.ts`: an app never names them.
 */
export { AgentStreamRunner, type AgentStreamRunnerOptions } from './runner.js'

/**
 * `adonis-agent-stream/copilotkit`: a CopilotKit agent runner whose memory is the package's
 * store (docs/copilotkit.md). Needs `rxjs` and `@ag-ui/client`, which `@copilotkit/runtime`
 * brings; nothing else of the package is loaded.
 */
export {
  AgentStreamRunner,
  type AgentStreamRunnerOptions,
  type AgUiEventLike,
  type RunnerAgent,
  type RunnerConnectRequest,
  type RunnerRunRequest,
} from './runner.js'

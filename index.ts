/**
 * adonis-agent-stream: durable, resumable agent streams for AdonisJS 7.
 *
 * The public face, what a host app imports: the config and the `AgentStream` service, the runner
 * contract, the approver policy, the typed errors, the routes, the runtime and its two Fetch
 * handlers (outside AdonisJS), the Lucid sink and its notifiers, and what `node ace configure`
 * needs. Elsewhere:
 *
 * - `adonis-agent-stream/types`: every public type (frames, hooks, options), and the container
 *   binding of `agentStream`;
 * - `adonis-agent-stream/schema`: the tables' helpers the published migration calls;
 * - `adonis-agent-stream/ai-sdk`, `/copilotkit`, `/testing`: AI SDK agents, the CopilotKit runner,
 *   a scripted agent for tests (each loads its optional peer; the root never does).
 */
export { defineConfig } from './src/define_config.js'
export { AgentStream } from './src/agent_stream.js'

export type {
  AgentRunner,
  ContinueContext,
  ResumeContext,
  RunContext,
  RunOutcome,
} from './src/runner/contract.js'
export { INTERRUPTED_TOOL_ERROR } from './src/runner/contract.js'
export { defaultApproverPolicy } from './src/parking/policy.js'

// Every error class, keyed by its code (`errors.E_DECISION_CONFLICT`), as AdonisJS packages do.
export { errors } from './src/errors.js'

export { registerRoutes } from './src/http/routes.js'
export { createRuntime } from './src/runtime.js'
export { createAgUiFetchHandler } from './src/http/fetch_handler.js'
export { createUiMessageFetchHandler } from './src/http/ui_message_fetch_handler.js'
export { createDurableStreamsFetchHandler } from './src/http/durable_streams_fetch_handler.js'
export { createRequestLimits } from './src/http/limits.js'

export { LucidTokenStreamSink } from './src/sink/lucid_sink.js'
export { childSinkWriter } from './src/sink/spi.js'
export { notifiers } from './src/follow/notifiers/index.js'

export { stubsRoot } from './stubs/main.js'
export { configure } from './configure.js'

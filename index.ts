/**
 * adonis-agent-stream: durable, resumable agent streams for AdonisJS 7.
 *
 * The public face, what a host app uses: the config, the `AgentStream` service, the sink and its
 * SPI (frames, writers, cursors), the runner contract, the principal and policy hooks, the typed
 * errors, the routes, the AG-UI door for custom routes, and the migration's table helpers.
 * A scripted agent for tests lives under `adonis-agent-stream/testing`.
 */
export { defineConfig } from './src/define_config.js'
export type { AgentStreamConfig, Duration, ResolvedAgentStreamConfig } from './src/define_config.js'
export { AgentStream } from './src/agent_stream.js'

export type {
  AgentStreamErrorCode,
  AgentStreamEvent,
  DeliveredFrame,
  ElicitationOption,
  ElicitationQuestion,
  ElicitationRequest,
  StreamFrame,
  ToolConfirmation,
  UserPart,
} from './src/core/frames.js'
export type { SinkWriter, TokenStreamSink } from './src/sink/spi.js'
export { childSinkWriter } from './src/sink/spi.js'
export { LucidTokenStreamSink } from './src/sink/lucid_sink.js'
export type { LucidSinkOptions, SubscribeOptions } from './src/sink/lucid_sink.js'
export { formatCursor, parseCursor } from './src/core/cursor.js'
export type { Cursor } from './src/core/cursor.js'
export { notifiers } from './src/follow/notifiers/index.js'
export type { NotifierFactory } from './src/follow/notifiers/notifier.js'

export type { AgentRunner, ResumeContext, RunContext, RunOutcome } from './src/runner/contract.js'
export type { HistoryBounds } from './src/runner/conversation.js'
export type { UserMessage } from './src/core/user_message.js'
export { FAILURE_SENTENCES } from './src/runner/contract.js'
export type { Principal } from './src/core/run.js'
export type { ApproverPolicy } from './src/parking/types.js'
export { defaultApproverPolicy } from './src/parking/policy.js'
export type { PrincipalResolver, AdminAuthorizer, DisplayName } from './src/http/principal.js'

// Every error class, keyed by its code (`errors.E_DECISION_CONFLICT`), as AdonisJS packages do.
export { errors } from './src/errors.js'

export { registerRoutes } from './src/http/routes.js'
export type { RoutesOptions } from './src/http/routes.js'
export { AgUiDoor } from './src/agui/door/index.js'
export type { AgUiReply } from './src/agui/door/index.js'
export { createRuntime } from './src/runtime.js'
export type { RuntimeOptions } from './src/runtime.js'
export { createAgUiFetchHandler } from './src/http/fetch_handler.js'
export type { AgUiFetchHandlerOptions } from './src/http/fetch_handler.js'
export { createUiMessageFetchHandler } from './src/http/ui_message_fetch_handler.js'
export type { UiMessageFetchHandlerOptions } from './src/http/ui_message_fetch_handler.js'

// What the published migration stub imports (stubs/make/migration/agent_stream_tables.stub).
export {
  createCheckpointsTable,
  dropCheckpointsTable,
  createDoorTables,
  createParkingTables,
  addQueueIndexes,
  dropQueueIndexes,
  addThreadListIndex,
  dropThreadListIndex,
  createStreamTables,
  dropDoorTables,
  dropParkingTables,
  dropStreamTables,
} from './src/store/schema.js'
export { stubsRoot } from './stubs/main.js'
export { configure } from './configure.js'

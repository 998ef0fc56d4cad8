/**
 * adonis-agent-stream: durable, resumable agent streams for AdonisJS 7.
 *
 * The public face: the frame vocabulary and the sink SPI, the Lucid sink, cursors,
 * the table definitions and the typed errors.
 */
export type {
  AgentStreamErrorCode,
  AgentStreamEvent,
  DeliveredFrame,
  ElicitationOption,
  ElicitationQuestion,
  ElicitationRequest,
  StreamFrame,
  ToolConfirmation,
} from './src/core/frames.js'
export { AGENT_STREAM_ERROR_CODES, FRAME_KINDS } from './src/core/frames.js'
export type { SinkWriter, TokenStreamSink } from './src/sink/spi.js'
export { childSinkWriter } from './src/sink/spi.js'
export { LucidTokenStreamSink } from './src/sink/lucid_sink.js'
export type { LucidSinkOptions, SubscribeOptions } from './src/sink/lucid_sink.js'
export { LucidSinkWriter } from './src/sink/writer.js'
export { RUN_FAILED_MESSAGE } from './src/sink/subscriber.js'
export { formatCursor, parseCursor, compareCursors } from './src/core/cursor.js'
export type { Cursor } from './src/core/cursor.js'
export { DEFAULT_MAX_FRAME_BYTES, validateFrame } from './src/sink/validate.js'
export {
  createParkingTables,
  createDoorTables,
  dropDoorTables,
  createStreamTables,
  dropParkingTables,
  dropStreamTables,
  tableNames,
  DEFAULT_TABLES,
} from './src/store/schema.js'
export type { TableNames } from './src/store/schema.js'
export {
  InvalidCursorError,
  InvalidFrameError,
  InvalidRunIdError,
  StreamClosedError,
} from './src/errors.js'
export { defineConfig } from './src/define_config.js'
export type { AgentStreamConfig, Duration, ResolvedAgentStreamConfig } from './src/define_config.js'
export { AgentStream } from './src/agent_stream.js'
export { stubsRoot } from './stubs/main.js'
export { configure } from './configure.js'
export { createRuntime, createParking } from './src/runtime.js'
export type { RuntimeOptions, ParkingOptions } from './src/runtime.js'
export { ParkingService, ParkingStore, defaultApproverPolicy } from './src/parking/index.js'
export type { Decider, ReadyNotice, ReadyListener } from './src/parking/index.js'
export type { ApproverPolicy, ItemStatus, PendingItem, SettledItem } from './src/parking/types.js'
export type { Principal, RunMeta } from './src/core/run.js'
export { RunDriver } from './src/runner/driver.js'
export type { AgentRunner, ResumeContext, RunContext, RunOutcome } from './src/runner/contract.js'
export { FAILURE_SENTENCES } from './src/runner/contract.js'
export { scriptedAgent } from './src/testing/scripted_agent.js'
export type { ScriptedAgentOptions } from './src/testing/scripted_agent.js'
export {
  DecisionConflictError,
  DecisionForbiddenError,
  DecisionLapsedError,
  DecisionMismatchError,
  InvalidDecisionError,
  ParkedItemNotFoundError,
} from './src/errors.js'
export {
  FrameTranslator,
  questionSetSchema,
  APPROVAL_RESPONSE_SCHEMA,
  TOOL_FAILED_SENTENCE,
  TOOL_DECLINED_SENTENCE,
  SUBAGENT_FAILED_SENTENCE,
} from './src/agui/translate/translator.js'
export type {
  AgUiEvent,
  AgUiInterrupt,
  AgentStreamState,
  TranslatorOptions,
} from './src/agui/translate/translator.js'
export { encodeAgUiId, decodeAgUiId, AGUI_ID_KINDS } from './src/agui/ids.js'
export { AgUiDoor } from './src/agui/door/door.js'
export type { AgUiDoorOptions, AgUiRefusalCode, DoorReply, SseItem } from './src/agui/door/door.js'
export { registerRoutes } from './src/http/routes.js'
export type { RoutesOptions } from './src/http/routes.js'
export type { PrincipalResolver, AdminAuthorizer } from './src/http/principal.js'

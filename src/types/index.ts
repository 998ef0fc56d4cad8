/**
 * `adonis-agent-stream/types`: every public type of the package, for a host app's
 * `import type { ... } from 'adonis-agent-stream/types'`. Importing it also brings the container
 * binding (`app.container.make('agentStream')` is an `AgentStream`), as the provider does.
 *
 * Types only: this module exports no value. The runner contract is at the root too.
 */
import './extended.js'

// config/agent_stream.ts
export type {
  AgentStreamConfig,
  Duration,
  ResolvedAgentStreamConfig,
  RunnerFactory,
  WebhooksConfig,
} from '../define_config.js'
export type { WebhookEndpoint } from '../telemetry/webhooks/config.js'
export type { LifecycleEventType } from '../core/lifecycle.js'
export type { HistoryBounds } from '../runner/conversation.js'
export type { TraceOptions } from '../telemetry/traces/options.js'
export type {
  LimitsConfig,
  RateLimitRule,
  StreamLimitRule,
  RequestLimits,
  LimiterManagerLike,
} from '../http/limits.js'

// The runner contract (also at the root).
export type {
  AgentRunner,
  ContinueContext,
  ResumeContext,
  RunContext,
  RunOutcome,
} from '../runner/contract.js'
export type { ParkedItem, SettledItem } from '../parking/types.js'

// The frames a runner writes and a reader gets (the sink SPI's vocabulary: docs/design.md).
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
} from '../core/frames.js'
export type { Cursor } from '../core/cursor.js'
export type { UserMessage } from '../core/user_message.js'

// The sink and its options.
export type { SinkWriter, TokenStreamSink } from '../sink/spi.js'
export type { LucidSinkOptions, SubscribeOptions } from '../sink/lucid_sink.js'
export type { NotifierFactory } from '../follow/notifiers/notifier.js'

// The hooks of config/agent_stream.ts: who a request is for, who may open the console and
// decide, how a person is named.
export type { Principal } from '../core/run.js'
export type { AdminAuthorizer, DisplayName, PrincipalResolver } from '../http/principal.js'
export type { ApproverPolicy } from '../parking/types.js'

// The options of the root's functions.
export type { RoutesOptions } from '../http/routes.js'
export type { RuntimeOptions } from '../runtime.js'
export type { AgUiFetchHandlerOptions } from '../http/fetch_handler.js'
export type { UiMessageFetchHandlerOptions } from '../http/ui_message_fetch_handler.js'
export type { DurableStreamsFetchHandlerOptions } from '../http/durable_streams_fetch_handler.js'
export type { DurableStreamsOptions } from '../durable_streams/write/door.js'
export type { DurableAuthorize, DurableAction } from '../durable_streams/write/context.js'

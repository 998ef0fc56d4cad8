import type {
  ActivitySnapshotEvent,
  CustomEvent,
  MessagesSnapshotEvent,
  ReasoningEndEvent,
  ReasoningMessageContentEvent,
  ReasoningMessageEndEvent,
  ReasoningMessageStartEvent,
  ReasoningStartEvent,
  RunErrorEvent,
  RunFinishedEvent,
  RunStartedEvent,
  StateDeltaEvent,
  StateSnapshotEvent,
  StepFinishedEvent,
  StepStartedEvent,
  SubagentErrorEvent,
  SubagentFinishedEvent,
  SubagentStartedEvent,
  TextMessageContentEvent,
  TextMessageEndEvent,
  TextMessageStartEvent,
  ToolCallArgsEvent,
  ToolCallEndEvent,
  ToolCallResultEvent,
  ToolCallStartEvent,
} from '@ag-ui/core'
import type { ProjectionRules } from '../../core/projection.js'

/**
 * An AG-UI 1.0 event as this package writes it (docs/design.md, "Events"), typed by
 * `@ag-ui/core`: the translator's events plus the door's `MESSAGES_SNAPSHOT`. Never `null` for
 * an absent field, never a timestamp (the translator has no clock).
 */
export type AgUiEvent =
  | RunStartedEvent
  | RunFinishedEvent
  | RunErrorEvent
  | StepStartedEvent
  | StepFinishedEvent
  | TextMessageStartEvent
  | TextMessageContentEvent
  | TextMessageEndEvent
  | ToolCallStartEvent
  | ToolCallArgsEvent
  | ToolCallEndEvent
  | ToolCallResultEvent
  | ReasoningStartEvent
  | ReasoningMessageStartEvent
  | ReasoningMessageContentEvent
  | ReasoningMessageEndEvent
  | ReasoningEndEvent
  | ActivitySnapshotEvent
  | CustomEvent
  | StateSnapshotEvent
  | StateDeltaEvent
  | MessagesSnapshotEvent
  | SubagentStartedEvent
  | SubagentFinishedEvent
  | SubagentErrorEvent

/**
 * Any AG-UI event read generically: its `type` plus whatever fields it has. For code that
 * inspects events field by field (tests, logs); every {@link AgUiEvent} is one.
 */
export type AgUiEventRecord = { type: string } & Record<string, unknown>

export interface TranslatorOptions extends ProjectionRules {
  /** The stream's run id: every id is minted under it, so ids survive replays and replicas. */
  streamRunId: string
  /**
   * Send the door's projection of the run ({@link AgentStreamState}) as the
   * `agent_stream.run_state` CUSTOM event before every `RUN_FINISHED`. Default true. (The
   * agent's own state is `STATE_SNAPSHOT` / `STATE_DELTA`, from its `state` frames.)
   */
  stateSnapshot?: boolean
  /**
   * Send the projection again (`agent_stream.run_state`, the whole of it) after every step that
   * changed it. Default false.
   */
  stateDeltas?: boolean
  /**
   * Tools the client offered (frontend tools): a call to one that has no result when the run
   * finishes is the client's to run, named in `RUN_FINISHED.outcome.pendingToolCallIds`.
   */
  clientTools?: string[]
  /**
   * Keep the transcript ({@link FrameTranslator.messages}) for `MESSAGES_SNAPSHOT`. Off, nothing
   * is kept: a reader's memory does not grow with the run. Default false.
   */
  messagesSnapshot?: boolean
}

/** An AG-UI 1.0 interrupt (`RUN_FINISHED.outcome.interrupts[]`). */
export interface AgUiInterrupt {
  id: string
  reason: 'tool_call' | 'input_required'
  message?: string
  toolCallId?: string
  responseSchema?: Record<string, unknown>
  expiresAt?: string
  subagentRunId?: string
}

/**
 * The door's projection of a run, from the stored frames: its title, how many steps finished,
 * summed numeric token usage. Sent as the `agent_stream.run_state` CUSTOM event's `value`, never
 * as the agent's state (`STATE_SNAPSHOT` / `STATE_DELTA` carry only what `state` frames set).
 */
export interface AgentStreamState {
  title: string | null
  steps: number
  usage: Record<string, number>
}

/** How a segment ends (`RUN_FINISHED.outcome`). */
export type AgUiOutcome =
  | { type: 'success'; pendingToolCallIds?: string[] }
  | { type: 'cancelled' }
  | { type: 'interrupt'; interrupts: AgUiInterrupt[] }

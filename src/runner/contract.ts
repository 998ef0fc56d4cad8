import type { AgentStreamErrorCode, DeliveredFrame } from '../core/frames.js'
import type { SinkWriter } from '../sink/spi.js'
import type { SettledItem } from '../parking/types.js'
import type { Principal } from '../core/run.js'

/**
 * What a runner gets for one segment of a run (the frames between two parks).
 *
 * `writer` writes into the TOP-LEVEL run's stream; its `end()` only flushes: the package ends
 * the stream with the segment's outcome.
 */
export interface RunContext {
  /** This run (a delegated child's own id when the child is resumed). */
  runId: string
  /** The top-level run whose stream this is. */
  streamRunId: string
  threadId: string
  /** The parent run, for a delegated run; `null` at the top. */
  parentRunId: string | null
  /**
   * The run's input as the app gave it (JSON). The doors give `{ message, context }` (the
   * newest user message's text, AG-UI `context`), plus `body` (useChat: the request's own
   * fields, `DefaultChatTransport({ body })`) or `forwardedProps` (AG-UI) when the client sent
   * any, `state` (the page's state: AG-UI `RunAgentInput.state`, useChat's body `state`; a JSON
   * object within `maxStateBytes`) when it sent a non-empty one, and the frontend tools'
   * `tools` / `toolResults` when those are on.
   */
  input: unknown
  writer: SinkWriter
  /** Aborted when the run is cancelled on this replica. */
  signal: AbortSignal
  /** Who the run is for. */
  principal: Principal | null
  /**
   * A context for a delegated run: its frames go into this stream, an `approval` or
   * `elicitation` it writes parks the CHILD (keyed by `childRunId`). Its first frame is preceded
   * by a `subagent-start` event (AG-UI `SUBAGENT_STARTED`); call its {@link RunContext.finish}
   * when the child is done.
   *
   * @param options.name what the child is (AG-UI `SUBAGENT_STARTED.name`; default `'agent'`)
   * @param options.parentToolCallId the provider tool-call id that delegated, when one did
   */
  child(childRunId: string, options?: { name?: string; parentToolCallId?: string }): RunContext
  /**
   * End this delegated run's scope: writes `subagent-finish` (AG-UI `SUBAGENT_FINISHED`, or
   * `SUBAGENT_ERROR` with `status: 'failed'`). A no-op for a top-level run (the package ends it
   * with the segment's outcome). A resumed child calls it when it is done, before its parent
   * writes on.
   */
  finish(status?: 'success' | 'failed'): Promise<void>
  /**
   * The frames stored so far in this run's stream (every segment, in order; segment ends left
   * out), read through the sink's one read path (`sink.replay`) after what this segment wrote is
   * flushed. A resumed runner rebuilds its conversation from them, so it sends the model exactly
   * what it would have seen had it never stopped.
   */
  history(): AsyncIterable<DeliveredFrame>
  /**
   * The thread's turns BEFORE this run, oldest first: each earlier run's stored frames whole,
   * what the person said first (a `user-message` event: `{ id, parts }`, text and file parts)
   * and then what the agent wrote. Only the runs the doors started in this thread for the same
   * principal (`agent_agui_runs`), within the `history` bounds (`maxTurns`, `maxBytes`): past
   * them the oldest turns are left out whole. With {@link RunContext.history} (this run's own
   * frames, its `user-message` first) it is the whole conversation; `aiSdkAgent` sends both.
   */
  conversation(): AsyncIterable<DeliveredFrame>
}

/**
 * What `resume` gets on top of {@link RunContext}: what the parked segment kept, and the answers.
 * `resume` is called once per segment, when every item of it is settled. Its context is the run
 * that parked (a child's own, when a child parked alone: it continues its parent); when several
 * runs parked in one segment (sibling sub-agents, or a parent and a child), the run whose
 * `start` or `resume` returned `parked`.
 */
export interface ResumeContext extends RunContext {
  /** The checkpoint the parked segment returned (never sent to a browser). */
  checkpoint: unknown
  /**
   * Every item of the segment, settled: approved/rejected/expired/cancelled, answers; each with
   * the `runId` (and `park`) of the run that parked it.
   */
  items: SettledItem[]
}

/**
 * What `continue` gets on top of {@link RunContext}: a segment whose writer died (its process
 * was killed, its lease lapsed) is continued by another replica from what is stored. Its writer
 * already holds the stream: a `segment-continued` event was written when this replica took it
 * over, after everything the dead writer committed. `history()` gives every stored frame of the
 * run (the dead writer's included): a runner rebuilds its state from them, as for a resume.
 */
export interface ContinueContext extends RunContext {
  /** Whether the dead segment was a resume (then `checkpoint` and `items` are its own). */
  resumed: boolean
  /** The checkpoint the resumed segment was given (`null` for a first segment). */
  checkpoint: unknown
  /** The settled items the resumed segment was given (empty for a first segment). */
  items: SettledItem[]
}

/**
 * How a segment ended.
 * - `finished`: the run is done; the stream ends.
 * - `parked`: the run wrote approvals/elicitations and waits; `checkpoint` (JSON) is kept for
 *   `resume`.
 * - `cancelled`: someone stopped it; a `cancelled` event ends the stream.
 * - `failed`: an `error` frame with `code` (default `run_failed`) and a fixed sentence.
 * A runner that throws counts as `failed`; its error's text never reaches a reader.
 */
export type RunOutcome =
  | { status: 'finished' }
  | { status: 'parked'; checkpoint: unknown }
  | { status: 'cancelled' }
  | { status: 'failed'; code?: AgentStreamErrorCode }

/** The agent contract the host app implements. */
export interface AgentRunner {
  /** The agent's name in its spans (`gen_ai.agent.name`) unless config `telemetry.agentName` says. */
  readonly name?: string
  start(ctx: RunContext): Promise<RunOutcome>
  resume(ctx: ResumeContext): Promise<RunOutcome>
  /**
   * Continue a segment whose writer died mid-way, on the replica that took it over (optional:
   * a runner without it cannot be continued, and such a segment fails once its lease lapses,
   * as before). Called at most once per takeover, with what the dead segment was given; it must
   * not do again what is stored as done, nor run again a tool whose execution had started (its
   * outcome is unknown: record it as interrupted, see `INTERRUPTED_TOOL_ERROR`). `aiSdkAgent`
   * implements it.
   */
  continue?(ctx: ContinueContext): Promise<RunOutcome>
}

/**
 * The error a runner records (`tool-output-error`) for a tool call whose execution had started
 * on a replica that died before its result was stored: the call is not run again, and the model
 * is told.
 */
export const INTERRUPTED_TOOL_ERROR =
  'interrupted by a replica failure: the tool started, its outcome is unknown, and it was not run again'

export { FAILURE_SENTENCES } from '../core/frames.js'

import { EventType } from '@ag-ui/core'
import type { Cursor } from '../../core/cursor.js'
import type { AgentStreamEvent, StreamFrame } from '../../core/frames.js'
import { publicFrame } from '../../core/projection.js'
import { userMessageOf } from '../../core/user_message.js'
import { HANDLERS, customEvent } from './handlers.js'
import { TranslatorModel, type ModelState } from './model.js'
import { Transcript } from './transcript.js'
import type { AgentState } from '../../core/agent_state.js'
import { runStateEvent } from './agent_state.js'
import type {
  AgentStreamState,
  AgUiEvent,
  AgUiInterrupt,
  AgUiOutcome,
  TranslatorOptions,
} from './types.js'

type Handler = (model: TranslatorModel, frame: unknown, at: Cursor) => AgUiEvent[]

/** A translator's state at one position of a stream (see {@link FrameTranslator.checkpoint}). */
export interface TranslatorCheckpoint {
  model: ModelState
  transcript: Record<string, unknown>[] | null
}

/**
 * Stored frames in, AG-UI 1.0 events out (docs/design.md, "The mapping"): the same for a live
 * stream and a replay. PURE: no I/O, no clock; every id comes from the frames' stored positions,
 * so an entity has one id live, on replay, on every replica and after a restart. Every frame is
 * read through the public projection (`publicFrame`, `src/core/projection.ts`) first: the
 * translator only ever sees what may leave the process.
 *
 * It keeps a model of what is open (text, tool calls, steps, sub-agents) across segments: a run
 * that parks closes its constructs on the wire (AG-UI needs that before `RUN_FINISHED`) but its
 * steps and sub-agents stay open in the model, and the next AG-UI run re-opens them under the
 * same ids ({@link open}). A reader that re-attaches mid-segment gets the same join prelude:
 * feed the frames before its cursor to {@link push} and {@link endSegment} silently, then
 * {@link open}, then translate the rest.
 *
 * Mapping (one handler per kind, `./handlers.ts`): text -> `TEXT_MESSAGE_*` (opened lazily,
 * closed before anything else); `step-*` -> `STEP_*`; tool calls -> `TOOL_CALL_START/ARGS/END`
 * (with `parentMessageId`), results -> `TOOL_CALL_RESULT` with their own message id (failed and
 * declined calls get fixed sentences); `reasoning` -> `REASONING_*` when configured; components
 * and `ui` -> `ACTIVITY_SNAPSHOT` (a repeat with the same id replaces); `subagent-*` ->
 * `SUBAGENT_*` with `subagentRunId` on every event the sub-agent owns; `error` -> `RUN_ERROR` (a
 * fixed sentence); approvals and question sets -> interrupts; allow-listed events -> `CUSTOM`.
 */
export class FrameTranslator {
  #model: TranslatorModel
  /** The transcript (`MESSAGES_SNAPSHOT`), kept only when `messagesSnapshot` is on. */
  #transcript: Transcript | null

  constructor(readonly options: TranslatorOptions) {
    this.#model = new TranslatorModel(options)
    this.#transcript = options.messagesSnapshot ? new Transcript() : null
  }

  /**
   * What this translator knows after the frames pushed so far, as data a translator with the
   * same options can resume from ({@link restore}): a re-attach then translates only what
   * follows the checkpoint, not the whole stream before its cursor. Shares nothing with this
   * translator.
   */
  checkpoint(): TranslatorCheckpoint {
    return { model: this.#model.saveState(), transcript: this.#transcript?.save() ?? null }
  }

  /**
   * Continue from a {@link checkpoint} of a translator with the same options, as if the frames
   * before it had been pushed here. The checkpoint is copied, never changed.
   */
  restore(checkpoint: TranslatorCheckpoint) {
    this.#model.loadState(checkpoint.model)
    if (this.#transcript && checkpoint.transcript) this.#transcript.load(checkpoint.transcript)
  }

  /** The run reached an `error` frame (`RUN_ERROR` sent) or a `cancelled` event. */
  get terminal(): 'failed' | 'cancelled' | null {
    return this.#model.failed ? 'failed' : this.#model.cancelled ? 'cancelled' : null
  }

  /** The `RUN_ERROR` the run ended with, when an `error` frame ended it. */
  get failure(): AgUiEvent | null {
    return this.#model.failed
  }

  /** The door's projection of the run from the frames so far (not the agent's state). */
  get state(): AgentStreamState {
    return this.#model.snapshot()
  }

  /** The agent's own state (its `state` frames) as of the frames pushed so far; `null`: none. */
  get agentState(): AgentState | null {
    return this.#model.agentState
  }

  /** The segment's interrupts so far. */
  get interrupts(): readonly AgUiInterrupt[] {
    return this.#model.interrupts
  }

  /**
   * Translate one delivered frame at `at` (its cursor). A `superseded` component (a later one
   * with the same id replaced it) is sent only when it is the first of its id: the activity
   * message then takes the place it took live, and the latest version replaces its content. A
   * later superseded one changes the model as it did live (it closes open text) and is not
   * sent. Whether a reader met a component before or after it was replaced, the ids and the
   * order of what follows are the same.
   *
   * "The first of its id" as the model remembers: the last `REMEMBERED_COMPONENTS` ids
   * met, not the run's history (the state stays bounded). A repeat of an id met longer ago is
   * sent once more: the same activity message, replaced with what the latest version replaces
   * it with again. Every reader of the same rows decides it the same way (the list depends on
   * the rows met, not on whether they were superseded when met).
   */
  push(frame: StreamFrame, at: Cursor, superseded = false): AgUiEvent[] {
    // What the person said is no event of the agent's: only the transcript has it.
    const said = userMessageOf(frame)
    if (said) {
      this.#transcript?.user(said)
      return []
    }
    const projected = publicFrame(frame, this.options)
    if (!projected) return []
    const skip =
      superseded &&
      projected.t === 'component' &&
      !projected.partial &&
      projected.id !== undefined &&
      this.#model.metComponent(projected.id)
    if (skip) this.#model.touchComponent(projected.id!)
    const out = skip ? this.#model.closeText() : this.#translate(projected, at)
    if (this.#transcript) for (const event of out) this.#transcript.record(event)
    return out
  }

  /**
   * The transcript so far as AG-UI 1.0 messages (assistant text with its tool calls, tool
   * results, activity, reasoning when sent), in order: what `MESSAGES_SNAPSHOT` carries. Empty
   * unless `messagesSnapshot` is on.
   */
  messages(): Record<string, unknown>[] {
    return this.#transcript?.messages() ?? []
  }

  #translate(frame: StreamFrame, at: Cursor): AgUiEvent[] {
    const model = this.#model
    if (frame.t === 'text') return HANDLERS.text(model, frame, at)
    // A partial component is a live-only preview: a replay never has it, so neither does this.
    if (frame.t === 'component' && frame.partial) return []
    const out = model.closeText()
    if (frame.t === 'event') {
      const event = frame.event as { kind: string } & Record<string, unknown>
      const handle = Object.hasOwn(HANDLERS.event, event.kind)
        ? (HANDLERS.event[event.kind as AgentStreamEvent['kind']] as Handler)
        : null
      out.push(...(handle ? handle(model, event, at) : customEvent(model, event)))
    } else if (Object.hasOwn(HANDLERS, frame.t)) {
      // Frame kinds added later (readers skip what they do not know) translate to nothing.
      out.push(...(HANDLERS[frame.t] as Handler)(model, frame, at))
    }
    return out
  }

  /**
   * A stored segment ended (the run parked): its text and tool calls are closed for good, its
   * interrupts answered by whoever resumes; steps and sub-agents stay open for the next segment.
   * On the wire a segment's end is {@link close}; the events returned here (closing open text
   * and calls) are for a run served on past it (a cancelled park), and a silent replay drops
   * them.
   */
  endSegment(): AgUiEvent[] {
    const model = this.#model
    const out = model.closeText()
    for (const call of model.calls.values()) out.push(...model.endCall(call))
    model.interrupts = []
    // What the segment's end and the next run's start gave the client (see `close`, `open`).
    if (this.options.stateDeltas) model.sentState = model.snapshot()
    return out
  }

  /**
   * The start of an AG-UI run at the current position: `RUN_STARTED`, then the join prelude that
   * re-opens every construct open here (sub-agents and steps under their ids, then an open text
   * message and open tool calls) without re-sending anything the client has. First a
   * `STATE_SNAPSHOT` of the agent's state as of here, when its `state` frames set one (none: no
   * snapshot, the page's own state stands), so the `STATE_DELTA`s that follow apply to what a
   * client that never left holds.
   */
  open(run: { threadId: string; runId: string }): AgUiEvent[] {
    const model = this.#model
    const out: AgUiEvent[] = [
      { type: EventType.RUN_STARTED, threadId: run.threadId, runId: run.runId },
    ]
    // The agent's state as of here (none written yet: nothing, the page's own state stands).
    if (model.agentState !== null) {
      out.push({ type: EventType.STATE_SNAPSHOT, snapshot: structuredClone(model.agentState) })
    }

    for (const scope of model.scopes) {
      out.push(scope.kind === 'step' ? model.stepStarted(scope) : model.subStarted(scope))
    }
    if (model.text) out.push(model.textStarted(model.text))
    for (const call of model.calls.values()) {
      if (!call.ended) out.push(model.callStarted(call))
    }
    return out
  }

  /**
   * The end of an AG-UI run: close every open construct on the wire, the door's projection of
   * the run (`agent_stream.run_state` CUSTOM, when `stateSnapshot`), then `RUN_FINISHED` with the outcome: the segment's interrupts, `cancelled`, or
   * success. After an `error` frame there is nothing to close: `RUN_ERROR` ended the run.
   */
  close(run: { threadId: string; runId: string }): AgUiEvent[] {
    const model = this.#model
    if (model.failed) return []
    const out = model.closeText()
    for (const call of model.calls.values()) out.push(...model.endCall(call))
    // Scopes close innermost first; they stay in the model, to re-open on resume.
    for (let i = model.scopes.length - 1; i >= 0; i--) {
      const scope = model.scopes[i]
      if (scope.kind === 'step') {
        out.push(model.stepFinished(scope))
        continue
      }
      const interruptIds = model.interrupts
        .filter((interrupt) => model.within(interrupt.subagentRunId, i))
        .map((interrupt) => interrupt.id)
      out.push({
        type: EventType.SUBAGENT_FINISHED,
        subagentRunId: scope.id,
        ...(interruptIds.length > 0 ? { outcome: { type: 'suspended', interruptIds } } : {}),
      })
    }
    if (this.options.stateSnapshot ?? true) {
      out.push(runStateEvent(model.snapshot()))
      model.sentState = model.snapshot()
    }
    out.push({
      type: EventType.RUN_FINISHED,
      threadId: run.threadId,
      runId: run.runId,
      outcome: this.outcome(),
    })
    return out
  }

  /**
   * How the segment ends, for `RUN_FINISHED.outcome`: the interrupts it parked on, `cancelled`,
   * or success.
   */
  outcome(): AgUiOutcome {
    const model = this.#model
    if (model.interrupts.length > 0) return { type: 'interrupt', interrupts: [...model.interrupts] }
    if (model.cancelled) return { type: 'cancelled' }
    const pending = this.pendingClientCalls().map((call) => call.toolCallId)
    return pending.length > 0
      ? { type: 'success', pendingToolCallIds: pending }
      : { type: 'success' }
  }

  /**
   * Calls to the client's tools that have no result yet: its AG-UI id, the provider's id and the
   * tool's name (frontend tools; empty unless `clientTools` names some).
   */
  pendingClientCalls(): { toolCallId: string; callId: string; name: string }[] {
    const names = new Set(this.options.clientTools ?? [])
    if (names.size === 0) return []
    return [...this.#model.calls.entries()]
      .filter(([, call]) => names.has(call.name))
      .map(([callId, call]) => ({ toolCallId: call.toolCallId, callId, name: call.name }))
  }
}

import { EventType } from '@ag-ui/core'
import fastJsonPatch from 'fast-json-patch'
import { SUBAGENT_FAILED_SENTENCE } from '../../core/projection.js'
import { encodeAgUiId, type AgUiIdKind } from '../ids.js'
import type { AgentState } from '../../core/agent_state.js'
import { runStateEvent } from './agent_state.js'
import type { AgentStreamState, AgUiEvent, AgUiInterrupt, TranslatorOptions } from './types.js'

/** An open step or sub-agent; `owner` is the sub-agent (AG-UI id) that opened it. */
export type Scope =
  | { kind: 'step'; name: string; owner?: string }
  | {
      kind: 'sub'
      id: string
      runId: string
      name: string
      owner?: string
      parentToolCallId?: string
    }

/** A tool call without a result yet. `n` is the seq it started at (its ids are minted from it). */
export interface Call {
  toolCallId: string
  n: number
  name: string
  owner?: string
  parentMessageId?: string
  streamed: boolean
  ended: boolean
}

/**
 * How many component ids a translator remembers (the most recently sent): a `superseded`
 * component whose id is among them is not sent again (see `FrameTranslator.push`). A bound, so
 * the state (and every checkpoint of it) does not grow with the run: a replaced component whose
 * id was forgotten is sent once more on replay, which replaces the same activity message with
 * the same content the latest version then replaces again.
 */
export const REMEMBERED_COMPONENTS = 256

/** A {@link TranslatorModel}'s data, without its methods and options. */
export type ModelState = Pick<
  TranslatorModel,
  | 'text'
  | 'lastMessage'
  | 'scopes'
  | 'calls'
  | 'interrupts'
  | 'components'
  | 'cancelled'
  | 'failed'
  | 'state'
  | 'sentState'
  | 'agentState'
>

/** `{ subagentRunId }` when a sub-agent owns the event, else nothing. */
export const attributed = (owner: string | undefined) => (owner ? { subagentRunId: owner } : {})

/**
 * What the translator knows of the run so far (open text, calls, steps, sub-agents, the
 * segment's interrupts, the shared state), and the events that open and close its constructs.
 * The frame handlers ({@link ./handlers.ts}) read and change it; PURE.
 */
export class TranslatorModel {
  text: { messageId: string; owner?: string } | null = null
  /**
   * The assistant message the next calls belong to: the step's last text message, else the one
   * its first call minted (`startCall`), with its owner.
   */
  lastMessage: { id: string; owner?: string } | null = null
  scopes: Scope[] = []
  /** Tool calls without a result yet, by provider call id (reused ids get a fresh entry). */
  calls = new Map<string, Call>()
  interrupts: AgUiInterrupt[] = []
  /**
   * The ids of the components (and `ui` events) met most recently, oldest first, at most
   * {@link REMEMBERED_COMPONENTS}: a replaced component's first one is sent, not its repeats.
   * Touched by every component with an id, sent or not, so every reader of the same rows has
   * the same list (live, replayed, restored from a checkpoint). A set (its order is the
   * order of insertion: a touched id goes again last), so a touch is O(1), not a search.
   */
  components = new Set<string>()
  cancelled = false
  /** The `RUN_ERROR` an `error` frame gave, once one did. */
  failed: Extract<AgUiEvent, { type: EventType.RUN_ERROR }> | null = null
  /** The door's projection of the run (sent as the `agent_stream.run_state` CUSTOM event). */
  state: AgentStreamState = { title: null, steps: 0, usage: {} }
  /** The projection as the client last got it (`stateDeltas`: sent again only when changed). */
  sentState: AgentStreamState = { title: null, steps: 0, usage: {} }
  /**
   * The agent's own state as its `state` frames left it (`null`: none written yet): what a
   * re-attach's join prelude sends as `STATE_SNAPSHOT`. Bounded by the writer's `maxStateBytes`.
   */
  agentState: AgentState | null = null

  constructor(readonly options: TranslatorOptions) {}

  /** What this model knows, as plain data (shared with nothing: see `FrameTranslator.checkpoint`). */
  saveState(): ModelState {
    return structuredClone({
      text: this.text,
      lastMessage: this.lastMessage,
      scopes: this.scopes,
      calls: this.calls,
      interrupts: this.interrupts,
      components: this.components,
      cancelled: this.cancelled,
      failed: this.failed,
      state: this.state,
      sentState: this.sentState,
      agentState: this.agentState,
    })
  }

  /** Take the state {@link saveState} gave (a copy: the checkpoint stays as it was). */
  loadState(saved: ModelState) {
    Object.assign(this, structuredClone(saved))
  }

  /** The AG-UI id of the entity at stored position `n` (and `address`) of this stream. */
  id(kind: AgUiIdKind, n: number, address: string[] = []) {
    return encodeAgUiId({ runId: this.options.streamRunId, kind, n, address })
  }

  /** The innermost open sub-agent's AG-UI id: the owner of what is written now. */
  owner(): string | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const scope = this.scopes[i]
      if (scope.kind === 'sub') return scope.id
    }
    return undefined
  }

  /** The AG-UI id of the open sub-agent running as `runId`, if any. */
  subOf(runId: string) {
    const scope = this.scopes.findLast((s) => s.kind === 'sub' && s.runId === runId)
    return scope?.kind === 'sub' ? scope.id : undefined
  }

  /** Whether the sub-agent `id` is the scope at `index` or nested inside it. */
  within(id: string | undefined, index: number) {
    if (!id) return false
    for (let i = index; i < this.scopes.length; i++) {
      const scope = this.scopes[i]
      if (scope.kind === 'sub' && scope.id === id) return true
    }
    return false
  }

  /**
   * End the open sub-agent running as `runId` (nothing when none is): whatever it left open
   * inside its scope closes first, then `SUBAGENT_FINISHED` with `outcome`, or `SUBAGENT_ERROR`
   * (a fixed sentence) when it `failed`.
   */
  finishSub(runId: string, outcome: 'failed' | { type: 'success' }): AgUiEvent[] {
    const index = this.scopes.findLastIndex((s) => s.kind === 'sub' && s.runId === runId)
    if (index === -1) return []
    const out: AgUiEvent[] = []
    while (this.scopes.length > index + 1) out.push(this.closeScope(this.scopes.pop()!))
    const scope = this.scopes.pop() as Extract<Scope, { kind: 'sub' }>
    out.push(
      outcome === 'failed'
        ? {
            type: EventType.SUBAGENT_ERROR,
            subagentRunId: scope.id,
            code: 'subagent_failed',
            message: SUBAGENT_FAILED_SENTENCE,
          }
        : { type: EventType.SUBAGENT_FINISHED, subagentRunId: scope.id, outcome }
    )
    return out
  }

  /** A copy of the state (the client's copy must not follow later changes). */
  snapshot(): AgentStreamState {
    return structuredClone(this.state)
  }

  subStarted(scope: Extract<Scope, { kind: 'sub' }>): AgUiEvent {
    return {
      type: EventType.SUBAGENT_STARTED,
      subagentRunId: scope.id,
      name: scope.name,
      ...(scope.owner ? { parentSubagentRunId: scope.owner } : {}),
      ...(scope.parentToolCallId ? { parentToolCallId: scope.parentToolCallId } : {}),
    }
  }

  stepStarted(scope: Extract<Scope, { kind: 'step' }>): AgUiEvent {
    return { type: EventType.STEP_STARTED, stepName: scope.name, ...attributed(scope.owner) }
  }

  stepFinished(scope: Extract<Scope, { kind: 'step' }>): AgUiEvent {
    return { type: EventType.STEP_FINISHED, stepName: scope.name, ...attributed(scope.owner) }
  }

  closeScope(scope: Scope): AgUiEvent {
    if (scope.kind === 'step') return this.stepFinished(scope)
    return {
      type: EventType.SUBAGENT_FINISHED,
      subagentRunId: scope.id,
      outcome: { type: 'success' },
    }
  }

  /** Whether the component `id` was met lately (among {@link components}). */
  metComponent(id: string) {
    return this.components.has(id)
  }

  /** The component `id` was met (sent or not): it is the most recent, the oldest past the bound goes. */
  touchComponent(id: string) {
    const components = this.components
    if (!components.delete(id) && components.size >= REMEMBERED_COMPONENTS) {
      components.delete(components.values().next().value!)
    }
    components.add(id)
  }

  /** The activity message of a component (`id`: its own id, when it has one: it may be replaced). */
  activity(
    messageId: string,
    activityType: string,
    content: Record<string, unknown>,
    id?: string
  ): AgUiEvent {
    if (id !== undefined) this.touchComponent(id)
    return {
      type: EventType.ACTIVITY_SNAPSHOT,
      messageId,
      activityType,
      content,
      replace: true,
      ...attributed(this.owner()),
    }
  }

  /** The projection again (`agent_stream.run_state` CUSTOM) when it changed since last sent. */
  stateDelta(): AgUiEvent[] {
    if (fastJsonPatch.compare(this.sentState, this.state).length === 0) return []
    this.sentState = this.snapshot()
    return [runStateEvent(this.snapshot())]
  }

  startCall(callId: string, name: string, seq: number): AgUiEvent[] {
    // The provider's id is not unique in a run (reused across iterations): the AG-UI id is
    // minted from the stored position, with the provider's id as the address.
    const owner = this.owner()
    // A tool call belongs to an assistant message of its own owner (the verifier checks it):
    // the text before it, else one minted from this call's position, which the calls after it
    // share until the next text or step.
    if (this.lastMessage?.owner !== owner) this.lastMessage = null
    this.lastMessage ??= { id: this.id('msg', seq), owner }
    const call: Call = {
      toolCallId: this.id('tool', seq, [callId]),
      n: seq,
      name,
      owner,
      parentMessageId: this.lastMessage.id,
      streamed: false,
      ended: false,
    }
    this.calls.set(callId, call)
    return [this.callStarted(call)]
  }

  callStarted(call: Call): AgUiEvent {
    return {
      type: EventType.TOOL_CALL_START,
      toolCallId: call.toolCallId,
      toolCallName: call.name,
      ...(call.parentMessageId ? { parentMessageId: call.parentMessageId } : {}),
      ...attributed(call.owner),
    }
  }

  /** `TOOL_CALL_END` for `call` unless it ended already; marks it ended. */
  endCall(call: Call): AgUiEvent[] {
    if (call.ended) return []
    call.ended = true
    return [
      { type: EventType.TOOL_CALL_END, toolCallId: call.toolCallId, ...attributed(call.owner) },
    ]
  }

  textStarted(text: { messageId: string; owner?: string }): AgUiEvent {
    return {
      type: EventType.TEXT_MESSAGE_START,
      messageId: text.messageId,
      role: 'assistant',
      ...attributed(text.owner),
    }
  }

  closeText(): AgUiEvent[] {
    if (!this.text) return []
    const { messageId, owner } = this.text
    this.text = null
    return [{ type: EventType.TEXT_MESSAGE_END, messageId, ...attributed(owner) }]
  }
}

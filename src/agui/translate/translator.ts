import fastJsonPatch from 'fast-json-patch'
import type { Cursor } from '../../core/cursor.js'
import { FAILURE_SENTENCES, type ElicitationRequest, type StreamFrame } from '../../core/frames.js'
import { encodeAgUiId, type AgUiIdKind } from '../ids.js'

/**
 * An AG-UI 1.0 event as this translator writes it: `type` plus its fields (agui-1.0.md 1.3).
 * Never `null` for an absent field, never a timestamp (the translator has no clock).
 */
export type AgUiEvent = { type: string } & Record<string, unknown>

export interface TranslatorOptions {
  /** The stream's run id: every id is minted under it, so ids survive replays and replicas. */
  streamRunId: string
  /** Send `tool-output-error` text to the client (off: a fixed sentence). Default false. */
  toolErrorText?: boolean
  /** `event` kinds sent as `CUSTOM`, with the fields each may carry. Default: `title: ['title']`. */
  custom?: Record<string, string[]>
  /** Send `reasoning` events as `REASONING_*` (off: nothing). Default false. */
  reasoning?: boolean
  /** Send `STATE_SNAPSHOT` before every `RUN_FINISHED`. Default true. */
  stateSnapshot?: boolean
  /** Send a `STATE_DELTA` (RFC 6902) after every step that changed the state. Default false. */
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
 * The state the door shares with a frontend (`STATE_SNAPSHOT` / `STATE_DELTA`), projected from
 * the stored frames: the run's title, how many steps finished, summed numeric token usage.
 */
export interface AgentStreamState {
  title: string | null
  steps: number
  usage: Record<string, number>
}

/**
 * The JSON Schema (draft 2020-12) of a question set's reply, as an `input_required` interrupt's
 * `responseSchema`: `{ answers: { [questionId]: string[] }, skipped? }` (sink-spi.md).
 */
export function questionSetSchema(request: ElicitationRequest): Record<string, unknown> {
  const properties: Record<string, unknown> = {}
  for (const question of request.questions) {
    const values: Record<string, unknown> = { type: 'string' }
    if (!question.allowFreeText) values.enum = question.options.map((o) => o.value)
    properties[question.id] = {
      type: 'array',
      title: question.prompt,
      items: values,
      ...(question.multiple ? {} : { maxItems: 1 }),
      ...(question.defaults ? { default: question.defaults } : {}),
    }
  }
  return {
    type: 'object',
    properties: {
      answers: { type: 'object', properties, additionalProperties: false },
      skipped: { type: 'boolean' },
    },
    additionalProperties: false,
  }
}

/**
 * The JSON Schema of an approval's reply (`tool_call` interrupt's `responseSchema`):
 * `{ approved: boolean, reason?: string, editedArgs?: object }`; `editedArgs` replaces the
 * call's arguments whole (agui-conformance.md 2c, approve-with-edits).
 */
export const APPROVAL_RESPONSE_SCHEMA: Record<string, unknown> = Object.freeze({
  type: 'object',
  properties: {
    approved: { type: 'boolean' },
    reason: { type: 'string', maxLength: 2000 },
    editedArgs: { type: 'object' },
  },
  required: ['approved'],
  additionalProperties: false,
})

/** What a failed tool call's result says unless the app opts in to the error text. */
export const TOOL_FAILED_SENTENCE = 'The tool call failed.'
/** What a declined tool call's result says. */
export const TOOL_DECLINED_SENTENCE = 'The person declined this tool call; it did not run.'
/** What `SUBAGENT_ERROR` says of a delegated run that failed. */
export const SUBAGENT_FAILED_SENTENCE = 'A delegated agent stopped unexpectedly.'

type Scope =
  | { kind: 'step'; name: string; owner?: string }
  | {
      kind: 'sub'
      id: string
      runId: string
      name: string
      owner?: string
      parentToolCallId?: string
    }

interface Call {
  toolCallId: string
  n: number
  name: string
  owner?: string
  parentMessageId?: string
  streamed: boolean
  ended: boolean
}

const attributed = (owner: string | undefined) => (owner ? { subagentRunId: owner } : {})

/**
 * Stored frames in, AG-UI 1.0 events out (agui-conformance.md section 1c): the same for a live
 * stream and a replay. PURE: no I/O, no clock; every id comes from the frames' stored positions,
 * so an entity has one id live, on replay, on every replica and after a restart.
 *
 * It keeps a model of what is open (text, tool calls, steps, sub-agents) across segments: a run
 * that parks closes its constructs on the wire (AG-UI needs that before `RUN_FINISHED`) but its
 * steps and sub-agents stay open in the model, and the next AG-UI run re-opens them under the
 * same ids ({@link open}). A reader that re-attaches mid-segment gets the same join prelude:
 * feed the frames before its cursor to {@link push} and {@link endSegment} silently, then
 * {@link open}, then translate the rest.
 *
 * Mapping: text -> `TEXT_MESSAGE_*` (opened lazily, closed before anything else); `step-*` ->
 * `STEP_*`; tool calls -> `TOOL_CALL_START/ARGS/END` (with `parentMessageId`), results ->
 * `TOOL_CALL_RESULT` with their own message id (failed and declined calls get fixed sentences);
 * `reasoning` -> `REASONING_*` when configured; components and `ui` -> `ACTIVITY_SNAPSHOT` (a
 * repeat with the same id replaces); `subagent-*` -> `SUBAGENT_*` with `subagentRunId` on every
 * event the sub-agent owns; `error` -> `RUN_ERROR` (a fixed sentence); approvals and question
 * sets -> interrupts; allow-listed events -> `CUSTOM`.
 */
export class FrameTranslator {
  #text: { messageId: string; owner?: string } | null = null
  /** The assistant message the next calls belong to (the last text message), per owner. */
  #lastMessage: { id: string; owner?: string } | null = null
  #scopes: Scope[] = []
  /** Tool calls without a result yet, by provider call id (reused ids get a fresh entry). */
  #calls = new Map<string, Call>()
  #custom: Record<string, string[]>
  #interrupts: AgUiInterrupt[] = []
  #cancelled = false
  /** The `RUN_ERROR` an `error` frame gave, once one did. */
  #failed: AgUiEvent | null = null
  #state: AgentStreamState = { title: null, steps: 0, usage: {} }
  /** The transcript as AG-UI messages (`MESSAGES_SNAPSHOT`), built from the events sent. */
  #messages: Record<string, any>[] = []
  /** The state as the client last got it (for deltas). */
  #sentState: AgentStreamState = { title: null, steps: 0, usage: {} }

  constructor(readonly options: TranslatorOptions) {
    this.#custom = options.custom ?? { title: ['title'] }
  }

  #id(kind: AgUiIdKind, n: number, address: string[] = []) {
    return encodeAgUiId({ runId: this.options.streamRunId, kind, n, address })
  }

  /** The innermost open sub-agent's AG-UI id: the owner of what is written now. */
  #owner(): string | undefined {
    for (let i = this.#scopes.length - 1; i >= 0; i--) {
      const scope = this.#scopes[i]
      if (scope.kind === 'sub') return scope.id
    }
    return undefined
  }

  /** The run reached an `error` frame (`RUN_ERROR` sent) or a `cancelled` event. */
  get terminal(): 'failed' | 'cancelled' | null {
    return this.#failed ? 'failed' : this.#cancelled ? 'cancelled' : null
  }

  /** The `RUN_ERROR` the run ended with, when an `error` frame ended it. */
  get failure(): AgUiEvent | null {
    return this.#failed
  }

  /** The state projected from the frames so far. */
  get state(): AgentStreamState {
    return structuredClone(this.#state)
  }

  /** Translate one delivered frame at `at` (its cursor). */
  push(frame: StreamFrame, at: Cursor): AgUiEvent[] {
    const out = this.#translate(frame, at)
    if (this.options.messagesSnapshot) for (const event of out) this.#record(event)
    return out
  }

  /**
   * The transcript so far as AG-UI 1.0 messages (assistant text with its tool calls, tool
   * results, activity, reasoning when sent), in order: what `MESSAGES_SNAPSHOT` carries. Empty
   * unless `messagesSnapshot` is on.
   */
  messages(): Record<string, unknown>[] {
    return structuredClone(this.#messages)
  }

  #record(event: AgUiEvent) {
    const byId = (id: unknown) => this.#messages.find((m) => m.id === id)
    const who = event.subagentRunId ? { subagentRunId: event.subagentRunId } : {}
    switch (event.type) {
      case 'TEXT_MESSAGE_START':
        if (!byId(event.messageId))
          this.#messages.push({ id: event.messageId, role: 'assistant', content: '', ...who })
        break
      case 'TEXT_MESSAGE_CONTENT': {
        const message = byId(event.messageId)
        if (message) message.content = `${message.content ?? ''}${event.delta}`
        break
      }
      case 'TOOL_CALL_START': {
        const calls = this.#messages.flatMap((m) => m.toolCalls ?? [])
        if (calls.some((c: { id: string }) => c.id === event.toolCallId)) break
        let parent = byId(event.parentMessageId)
        if (parent?.role !== 'assistant') {
          parent = { id: event.toolCallId, role: 'assistant', toolCalls: [], ...who }
          this.#messages.push(parent)
        }
        parent.toolCalls ??= []
        parent.toolCalls.push({
          id: event.toolCallId,
          type: 'function',
          function: { name: event.toolCallName, arguments: '' },
        })
        break
      }
      case 'TOOL_CALL_ARGS': {
        for (const message of this.#messages) {
          const call = message.toolCalls?.find((c: { id: string }) => c.id === event.toolCallId)
          if (call) call.function.arguments += event.delta
        }
        break
      }
      case 'TOOL_CALL_RESULT':
        this.#messages.push({
          id: event.messageId,
          role: 'tool',
          toolCallId: event.toolCallId,
          content: event.content,
          ...who,
        })
        break
      case 'ACTIVITY_SNAPSHOT': {
        const message = {
          id: event.messageId,
          role: 'activity',
          activityType: event.activityType,
          content: event.content,
          ...who,
        }
        const index = this.#messages.findIndex((m) => m.id === event.messageId)
        if (index === -1) this.#messages.push(message)
        else this.#messages[index] = message
        break
      }
      case 'REASONING_MESSAGE_START':
        this.#messages.push({ id: event.messageId, role: 'reasoning', content: '', ...who })
        break
      case 'REASONING_MESSAGE_CONTENT': {
        const message = byId(event.messageId)
        if (message) message.content = `${message.content ?? ''}${event.delta}`
        break
      }
    }
  }

  #translate(frame: StreamFrame, at: Cursor): AgUiEvent[] {
    const out: AgUiEvent[] = []
    if (frame.t === 'text') {
      if (frame.v.length === 0) return out
      if (!this.#text) {
        const owner = this.#owner()
        this.#text = { messageId: this.#id('msg', at.seq), owner }
        this.#lastMessage = { id: this.#text.messageId, owner }
        out.push({
          type: 'TEXT_MESSAGE_START',
          messageId: this.#text.messageId,
          role: 'assistant',
          ...attributed(owner),
        })
      }
      out.push({
        type: 'TEXT_MESSAGE_CONTENT',
        messageId: this.#text.messageId,
        delta: frame.v,
        ...attributed(this.#text.owner),
      })
      return out
    }
    // A partial component is a live-only preview: a replay never has it, so neither does this.
    if (frame.t === 'component' && frame.partial) return out
    out.push(...this.#closeText())
    switch (frame.t) {
      case 'error':
        this.#failed = {
          type: 'RUN_ERROR',
          code: frame.code,
          message: FAILURE_SENTENCES[frame.code] ?? FAILURE_SENTENCES.run_failed,
        }
        out.push(this.#failed)
        return out
      case 'approval': {
        const call = this.#calls.get(frame.id)
        const sub = this.#subOf(frame.runId)
        this.#interrupts.push({
          id: this.#id('int', at.seq, [frame.runId, frame.id]),
          reason: 'tool_call',
          ...(call ? { toolCallId: call.toolCallId } : {}),
          ...(typeof frame.confirmation?.title === 'string'
            ? { message: frame.confirmation.title }
            : {}),
          responseSchema: APPROVAL_RESPONSE_SCHEMA,
          ...(frame.expiresAt ? { expiresAt: frame.expiresAt } : {}),
          ...(sub ? { subagentRunId: sub } : {}),
        })
        return out
      }
      case 'elicitation': {
        const sub = this.#subOf(frame.runId)
        this.#interrupts.push({
          id: this.#id('int', at.seq, [frame.runId, frame.id]),
          reason: 'input_required',
          ...(frame.request.preamble ? { message: frame.request.preamble } : {}),
          responseSchema: questionSetSchema(frame.request),
          ...(sub ? { subagentRunId: sub } : {}),
        })
        return out
      }
      case 'component':
        out.push(
          this.#activity(
            frame.id ? this.#id('act', 0, [frame.id]) : this.#id('act', at.seq),
            frame.name,
            {
              props: frame.data ?? null,
              ...(frame.fallbackText ? { fallbackText: frame.fallbackText } : {}),
              ...(frame.version !== undefined ? { version: frame.version } : {}),
            }
          )
        )
        return out
      case 'event':
        out.push(...this.#event(frame.event, at))
        return out
    }
    return out
  }

  #event(event: Extract<StreamFrame, { t: 'event' }>['event'], at: Cursor): AgUiEvent[] {
    const out: AgUiEvent[] = []
    switch (event.kind) {
      case 'step-start': {
        const owner = this.#owner()
        const stepName = `step-${at.seq}`
        this.#scopes.push({ kind: 'step', name: stepName, owner })
        out.push({ type: 'STEP_STARTED', stepName, ...attributed(owner) })
        break
      }
      case 'step-finish': {
        // The innermost step of whoever writes now; a sub-agent never closes its parent's step.
        const owner = this.#owner()
        for (let i = this.#scopes.length - 1; i >= 0; i--) {
          const scope = this.#scopes[i]
          if (scope.kind === 'sub') break
          if (scope.owner === owner) {
            this.#scopes.splice(i, 1)
            out.push({ type: 'STEP_FINISHED', stepName: scope.name, ...attributed(owner) })
            break
          }
        }
        this.#state.steps++
        if (event.usage) {
          for (const [key, value] of Object.entries(event.usage)) {
            if (typeof value === 'number' && Number.isFinite(value))
              this.#state.usage[key] = (this.#state.usage[key] ?? 0) + value
          }
        }
        if (this.options.stateDeltas) out.push(...this.#stateDelta())
        break
      }
      case 'subagent-start': {
        const owner = this.#owner()
        const id = this.#id('sub', at.seq, [event.runId])
        const parentToolCallId = event.parentToolCallId
          ? this.#calls.get(event.parentToolCallId)?.toolCallId
          : undefined
        const scope: Scope = {
          kind: 'sub',
          id,
          runId: event.runId,
          name: event.name ?? 'agent',
          owner,
          parentToolCallId,
        }
        this.#scopes.push(scope)
        out.push(this.#subStarted(scope))
        break
      }
      case 'subagent-finish': {
        const index = this.#scopes.findLastIndex((s) => s.kind === 'sub' && s.runId === event.runId)
        if (index === -1) break
        // Whatever the sub-agent left open inside its scope closes with it.
        while (this.#scopes.length > index + 1) out.push(this.#closeScope(this.#scopes.pop()!))
        const scope = this.#scopes.pop() as Extract<Scope, { kind: 'sub' }>
        out.push(
          event.status === 'failed'
            ? {
                type: 'SUBAGENT_ERROR',
                subagentRunId: scope.id,
                code: 'subagent_failed',
                message: SUBAGENT_FAILED_SENTENCE,
              }
            : { type: 'SUBAGENT_FINISHED', subagentRunId: scope.id, outcome: { type: 'success' } }
        )
        break
      }
      case 'reasoning': {
        if (!this.options.reasoning || event.text.length === 0) break
        const owner = this.#owner()
        const messageId = this.#id('rsn', at.seq)
        const who = attributed(owner)
        out.push(
          { type: 'REASONING_START', messageId, ...who },
          { type: 'REASONING_MESSAGE_START', messageId, role: 'reasoning', ...who },
          { type: 'REASONING_MESSAGE_CONTENT', messageId, delta: event.text, ...who },
          { type: 'REASONING_MESSAGE_END', messageId, ...who },
          { type: 'REASONING_END', messageId, ...who }
        )
        break
      }
      case 'ui':
        out.push(
          this.#activity(this.#id('act', 0, [event.id]), event.component, {
            props: event.props ?? null,
            ...(event.fallbackText ? { fallbackText: event.fallbackText } : {}),
            ...(event.version !== undefined ? { version: event.version } : {}),
          })
        )
        break
      case 'cancelled':
        this.#cancelled = true
        break
      case 'tool-input-start':
        out.push(...this.#startCall(event.id, event.name, at.seq))
        break
      case 'tool-input-delta': {
        const call = this.#calls.get(event.id)
        if (call && !call.ended && event.delta) {
          call.streamed = true
          out.push({
            type: 'TOOL_CALL_ARGS',
            toolCallId: call.toolCallId,
            delta: event.delta,
            ...attributed(call.owner),
          })
        }
        break
      }
      case 'tool-input-available': {
        const known = this.#calls.get(event.id)
        if (!known || known.ended) out.push(...this.#startCall(event.id, event.name, at.seq))
        const call = this.#calls.get(event.id)!
        if (!call.streamed) {
          out.push({
            type: 'TOOL_CALL_ARGS',
            toolCallId: call.toolCallId,
            delta: JSON.stringify(event.input ?? {}),
            ...attributed(call.owner),
          })
        }
        out.push({ type: 'TOOL_CALL_END', toolCallId: call.toolCallId, ...attributed(call.owner) })
        call.ended = true
        break
      }
      case 'tool-output':
      case 'tool-output-error':
      case 'tool-output-denied': {
        const call = this.#calls.get(event.id)
        if (!call) break
        if (!call.ended) {
          out.push({
            type: 'TOOL_CALL_END',
            toolCallId: call.toolCallId,
            ...attributed(call.owner),
          })
          call.ended = true
        }
        const content =
          event.kind === 'tool-output'
            ? JSON.stringify(event.output ?? null)
            : event.kind === 'tool-output-denied'
              ? TOOL_DECLINED_SENTENCE
              : this.options.toolErrorText
                ? JSON.stringify(event.error ?? null)
                : TOOL_FAILED_SENTENCE
        out.push({
          type: 'TOOL_CALL_RESULT',
          messageId: this.#id('res', call.n, [event.id]),
          toolCallId: call.toolCallId,
          content,
          role: 'tool',
          ...attributed(call.owner),
        })
        this.#calls.delete(event.id)
        break
      }
      default: {
        if (event.kind === 'title') this.#state.title = event.title
        const fields = Object.hasOwn(this.#custom, event.kind) ? this.#custom[event.kind] : null
        if (fields) {
          const value: Record<string, unknown> = {}
          for (const field of fields) {
            const v = (event as Record<string, unknown>)[field]
            if (v !== undefined) value[field] = v
          }
          out.push({ type: 'CUSTOM', name: event.kind, value, ...attributed(this.#owner()) })
        }
      }
    }
    return out
  }

  /**
   * A stored segment ended (the run parked): its text and tool calls are closed for good, its
   * interrupts answered by whoever resumes; steps and sub-agents stay open for the next segment.
   * Emits nothing: on the wire the segment's end is {@link close}.
   */
  endSegment() {
    this.#text = null
    for (const call of this.#calls.values()) call.ended = true
    this.#interrupts = []
  }

  /**
   * The start of an AG-UI run at the current position: `RUN_STARTED`, then the join prelude that
   * re-opens every construct open here (sub-agents and steps under their ids, then an open text
   * message and open tool calls) without re-sending anything the client has; with state deltas
   * on, a `STATE_SNAPSHOT` first so later deltas apply to what the client holds.
   */
  open(run: { threadId: string; runId: string }): AgUiEvent[] {
    const out: AgUiEvent[] = [{ type: 'RUN_STARTED', threadId: run.threadId, runId: run.runId }]
    if (this.options.stateDeltas) {
      out.push({ type: 'STATE_SNAPSHOT', snapshot: this.state })
      this.#sentState = this.state
    }
    for (const scope of this.#scopes) {
      out.push(
        scope.kind === 'step'
          ? { type: 'STEP_STARTED', stepName: scope.name, ...attributed(scope.owner) }
          : this.#subStarted(scope)
      )
    }
    if (this.#text) {
      out.push({
        type: 'TEXT_MESSAGE_START',
        messageId: this.#text.messageId,
        role: 'assistant',
        ...attributed(this.#text.owner),
      })
    }
    for (const call of this.#calls.values()) {
      if (!call.ended) out.push(this.#callStarted(call))
    }
    return out
  }

  /**
   * The end of an AG-UI run: close every open construct on the wire, the state snapshot (when
   * configured), then `RUN_FINISHED` with the outcome: the segment's interrupts, `cancelled`, or
   * success. After an `error` frame there is nothing to close: `RUN_ERROR` ended the run.
   */
  close(run: { threadId: string; runId: string }): AgUiEvent[] {
    if (this.#failed) return []
    const out = this.#closeText()
    for (const call of this.#calls.values()) {
      if (!call.ended) {
        out.push({ type: 'TOOL_CALL_END', toolCallId: call.toolCallId, ...attributed(call.owner) })
      }
      call.ended = true
    }
    // Scopes close innermost first; they stay in the model, to re-open on resume.
    for (let i = this.#scopes.length - 1; i >= 0; i--) {
      const scope = this.#scopes[i]
      if (scope.kind === 'step') {
        out.push({ type: 'STEP_FINISHED', stepName: scope.name, ...attributed(scope.owner) })
        continue
      }
      const interruptIds = this.#interrupts
        .filter((interrupt) => this.#within(interrupt.subagentRunId, i))
        .map((interrupt) => interrupt.id)
      out.push({
        type: 'SUBAGENT_FINISHED',
        subagentRunId: scope.id,
        ...(interruptIds.length > 0 ? { outcome: { type: 'suspended', interruptIds } } : {}),
      })
    }
    if (this.options.stateSnapshot ?? true) {
      out.push({ type: 'STATE_SNAPSHOT', snapshot: this.state })
      this.#sentState = this.state
    }
    out.push({
      type: 'RUN_FINISHED',
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
  outcome():
    | { type: 'success'; pendingToolCallIds?: string[] }
    | { type: 'cancelled' }
    | { type: 'interrupt'; interrupts: AgUiInterrupt[] } {
    if (this.#interrupts.length > 0) return { type: 'interrupt', interrupts: [...this.#interrupts] }
    if (this.#cancelled) return { type: 'cancelled' }
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
    return [...this.#calls.entries()]
      .filter(([, call]) => names.has(call.name))
      .map(([callId, call]) => ({ toolCallId: call.toolCallId, callId, name: call.name }))
  }

  /** The segment's interrupts so far. */
  get interrupts(): readonly AgUiInterrupt[] {
    return this.#interrupts
  }

  /** Whether the sub-agent `id` is the scope at `index` or nested inside it. */
  #within(id: string | undefined, index: number) {
    if (!id) return false
    for (let i = index; i < this.#scopes.length; i++) {
      const scope = this.#scopes[i]
      if (scope.kind === 'sub' && scope.id === id) return true
    }
    return false
  }

  #subOf(runId: string) {
    const scope = this.#scopes.findLast((s) => s.kind === 'sub' && s.runId === runId)
    return scope?.kind === 'sub' ? scope.id : undefined
  }

  #subStarted(scope: Extract<Scope, { kind: 'sub' }>): AgUiEvent {
    return {
      type: 'SUBAGENT_STARTED',
      subagentRunId: scope.id,
      name: scope.name,
      ...(scope.owner ? { parentSubagentRunId: scope.owner } : {}),
      ...(scope.parentToolCallId ? { parentToolCallId: scope.parentToolCallId } : {}),
    }
  }

  #closeScope(scope: Scope): AgUiEvent {
    if (scope.kind === 'step')
      return { type: 'STEP_FINISHED', stepName: scope.name, ...attributed(scope.owner) }
    return { type: 'SUBAGENT_FINISHED', subagentRunId: scope.id, outcome: { type: 'success' } }
  }

  #activity(messageId: string, activityType: string, content: Record<string, unknown>): AgUiEvent {
    return {
      type: 'ACTIVITY_SNAPSHOT',
      messageId,
      activityType,
      content,
      replace: true,
      ...attributed(this.#owner()),
    }
  }

  #stateDelta(): AgUiEvent[] {
    const delta = fastJsonPatch.compare(this.#sentState, this.#state)
    if (delta.length === 0) return []
    this.#sentState = this.state
    return [{ type: 'STATE_DELTA', delta }]
  }

  #startCall(callId: string, name: string, seq: number): AgUiEvent[] {
    // The provider's id is not unique in a run (reused across iterations): the AG-UI id is
    // minted from the stored position, with the provider's id as the address.
    const owner = this.#owner()
    const call: Call = {
      toolCallId: this.#id('tool', seq, [callId]),
      n: seq,
      name,
      owner,
      // A tool call belongs to a message of its own owner (the verifier checks it).
      parentMessageId: this.#lastMessage?.owner === owner ? this.#lastMessage?.id : undefined,
      streamed: false,
      ended: false,
    }
    this.#calls.set(callId, call)
    return [this.#callStarted(call)]
  }

  #callStarted(call: Call): AgUiEvent {
    return {
      type: 'TOOL_CALL_START',
      toolCallId: call.toolCallId,
      toolCallName: call.name,
      ...(call.parentMessageId ? { parentMessageId: call.parentMessageId } : {}),
      ...attributed(call.owner),
    }
  }

  #closeText(): AgUiEvent[] {
    if (!this.#text) return []
    const { messageId, owner } = this.#text
    this.#text = null
    return [{ type: 'TEXT_MESSAGE_END', messageId, ...attributed(owner) }]
  }
}

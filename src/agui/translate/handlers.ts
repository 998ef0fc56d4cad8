import { EventType } from '@ag-ui/core'
import type { Cursor } from '../../core/cursor.js'
import { FAILURE_SENTENCES, type AgentStreamEvent, type StreamFrame } from '../../core/frames.js'
import { customFields, deniedSentence } from '../../core/projection.js'
import { attributed, type Scope, type TranslatorModel } from './model.js'
import { APPROVAL_RESPONSE_SCHEMA, questionSetSchema } from './schemas.js'
import { agentStateEvents } from './agent_state.js'
import type { AgUiEvent } from './types.js'

/**
 * One handler per frame kind and per event kind: what a PROJECTED frame (`publicFrame`) becomes
 * on the AG-UI wire, and how it changes the {@link TranslatorModel}. The translator closes open
 * text before calling any handler but `text`'s.
 */

type FrameOf<T extends StreamFrame['t']> = Extract<StreamFrame, { t: T }>
type EventOf<K extends AgentStreamEvent['kind']> = Extract<AgentStreamEvent, { kind: K }>
type Handler<F> = (model: TranslatorModel, frame: F, at: Cursor) => AgUiEvent[]

/** The handler table's shape: every frame kind, and every known event kind under `event`. */
export type FrameHandlers = {
  [T in Exclude<StreamFrame['t'], 'event'>]: Handler<FrameOf<T>>
} & { event: { [K in AgentStreamEvent['kind']]: Handler<EventOf<K>> } }

/**
 * An event sent as `CUSTOM` when the app allow-lists its kind (`custom`), with the listed
 * fields only; otherwise nothing. Unknown kinds the projection let through come here too.
 */
export function customEvent(
  model: TranslatorModel,
  event: { kind: string } & Record<string, unknown>
): AgUiEvent[] {
  const value = customFields(event, model.options)
  if (!value) return []
  return [{ type: EventType.CUSTOM, name: event.kind, value, ...attributed(model.owner()) }]
}

const custom: Handler<AgentStreamEvent> = (model, event) =>
  customEvent(model, event as { kind: string } & Record<string, unknown>)

/**
 * A result's `content`: a string as it is (`"Haiku created"`, never `"\"Haiku created\""`),
 * anything else as JSON.
 */
export const resultContent = (value: unknown): string =>
  typeof value === 'string' ? value : JSON.stringify(value ?? null)

/**
 * A call's result: its output ({@link resultContent}), or a fixed sentence for a failed call or
 * one that did not run (declined, expired or cancelled: each its own).
 */
function callResult(
  model: TranslatorModel,
  event: EventOf<'tool-output' | 'tool-output-error' | 'tool-output-denied'>
): AgUiEvent[] {
  const call = model.calls.get(event.id)
  if (!call) return []
  const out = model.endCall(call)
  const content =
    event.kind === 'tool-output'
      ? resultContent(event.output)
      : event.kind === 'tool-output-denied'
        ? deniedSentence(event.status)
        : // The projection put the fixed sentence in place of the error unless the app opted in.
          resultContent(event.error)
  out.push({
    type: EventType.TOOL_CALL_RESULT,
    messageId: model.id('res', call.n, [event.id]),
    toolCallId: call.toolCallId,
    content,
    role: 'tool',
    ...attributed(call.owner),
  })
  model.calls.delete(event.id)
  return out
}

export const HANDLERS: FrameHandlers = {
  text(model, frame, at) {
    if (frame.v.length === 0) return []
    const out: AgUiEvent[] = []
    if (!model.text) {
      const owner = model.owner()
      model.text = { messageId: model.id('msg', at.seq), owner }
      model.lastMessage = { id: model.text.messageId, owner }
      out.push(model.textStarted(model.text))
    }
    out.push({
      type: EventType.TEXT_MESSAGE_CONTENT,
      messageId: model.text.messageId,
      delta: frame.v,
      ...attributed(model.text.owner),
    })
    return out
  },

  component(model, frame, at) {
    const id = frame.id ? model.id('act', 0, [frame.id]) : model.id('act', at.seq)
    return [
      // Its own id is remembered: a replay then skips the versions a later one replaced.
      model.activity(
        id,
        frame.name,
        {
          props: frame.data ?? null,
          ...(frame.fallbackText ? { fallbackText: frame.fallbackText } : {}),
          ...(frame.version !== undefined ? { version: frame.version } : {}),
        },
        frame.id
      ),
    ]
  },

  error(model, frame) {
    model.failed = {
      type: EventType.RUN_ERROR,
      code: frame.code,
      message: frame.message || FAILURE_SENTENCES.run_failed,
    }
    return [model.failed]
  },

  approval(model, frame, at) {
    const call = model.calls.get(frame.id)
    const sub = model.subOf(frame.runId)
    model.interrupts.push({
      id: model.id('int', at.seq, [frame.runId, frame.id]),
      reason: 'tool_call',
      ...(call ? { toolCallId: call.toolCallId } : {}),
      ...(typeof frame.confirmation?.title === 'string'
        ? { message: frame.confirmation.title }
        : {}),
      responseSchema: APPROVAL_RESPONSE_SCHEMA,
      ...(frame.expiresAt ? { expiresAt: frame.expiresAt } : {}),
      ...(sub ? { subagentRunId: sub } : {}),
    })
    return []
  },

  elicitation(model, frame, at) {
    const sub = model.subOf(frame.runId)
    model.interrupts.push({
      id: model.id('int', at.seq, [frame.runId, frame.id]),
      reason: 'input_required',
      ...(frame.request.preamble ? { message: frame.request.preamble } : {}),
      responseSchema: questionSetSchema(frame.request),
      ...(sub ? { subagentRunId: sub } : {}),
    })
    return []
  },

  event: {
    'step-start'(model, _event, at) {
      const out: AgUiEvent[] = []
      // One agent's steps follow each other: a step still open at the top ends here (else a
      // run of unfinished steps would nest, and the state grow, for ever).
      const top = model.scopes.at(-1)
      if (top?.kind === 'step') out.push(model.stepFinished(model.scopes.pop() as typeof top))
      // A step's calls belong to its own assistant message (its text, or one minted for them).
      model.lastMessage = null
      const scope: Scope = { kind: 'step', name: `step-${at.seq}`, owner: model.owner() }
      model.scopes.push(scope)
      out.push(model.stepStarted(scope))
      return out
    },

    'step-finish'(model, event) {
      const out: AgUiEvent[] = []
      // The innermost step of whoever writes now; a sub-agent never closes its parent's step.
      const owner = model.owner()
      for (let i = model.scopes.length - 1; i >= 0; i--) {
        const scope = model.scopes[i]
        if (scope.kind === 'sub') break
        if (scope.owner === owner) {
          model.scopes.splice(i, 1)
          out.push(model.stepFinished(scope))
          break
        }
      }
      model.state.steps++
      // The projection kept the finite numeric fields only.
      for (const [key, value] of Object.entries(event.usage ?? {})) {
        if (typeof value === 'number')
          model.state.usage[key] = (model.state.usage[key] ?? 0) + value
      }
      if (model.options.stateDeltas) out.push(...model.stateDelta())
      return out
    },

    'subagent-start'(model, event, at) {
      // A sub-agent run starts once: one still open under this run id ended without a word
      // (it closes, with what it left open, before the new one; the state stays bounded).
      const out = model.finishSub(event.runId, { type: 'success' })
      const scope: Scope = {
        kind: 'sub',
        id: model.id('sub', at.seq, [event.runId]),
        runId: event.runId,
        name: event.name ?? 'agent',
        owner: model.owner(),
        parentToolCallId: event.parentToolCallId
          ? model.calls.get(event.parentToolCallId)?.toolCallId
          : undefined,
      }
      model.scopes.push(scope)
      out.push(model.subStarted(scope))
      return out
    },

    'subagent-finish'(model, event) {
      return model.finishSub(
        event.runId,
        event.status === 'failed' ? 'failed' : { type: 'success' }
      )
    },

    // Only here when the app opted in: the projection drops reasoning otherwise.
    'reasoning'(model, event, at) {
      if (event.text.length === 0) return []
      const messageId = model.id('rsn', at.seq)
      const who = attributed(model.owner())
      return [
        { type: EventType.REASONING_START, messageId, ...who },
        { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning', ...who },
        { type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: event.text, ...who },
        { type: EventType.REASONING_MESSAGE_END, messageId, ...who },
        { type: EventType.REASONING_END, messageId, ...who },
      ]
    },

    'ui'(model, event) {
      return [
        model.activity(
          model.id('act', 0, [event.id]),
          event.component,
          {
            props: event.props ?? null,
            ...(event.fallbackText ? { fallbackText: event.fallbackText } : {}),
            ...(event.version !== undefined ? { version: event.version } : {}),
          },
          event.id
        ),
      ]
    },

    'cancelled'(model) {
      // A cancelled run continues no more: what it asked is no interrupt anyone can answer.
      model.cancelled = true
      model.interrupts = []
      return []
    },

    'tool-input-start'(model, event, at) {
      return model.startCall(event.id, event.name, at.seq)
    },

    'tool-input-delta'(model, event) {
      const call = model.calls.get(event.id)
      if (!call || call.ended || !event.delta) return []
      call.streamed = true
      return [
        {
          type: EventType.TOOL_CALL_ARGS,
          toolCallId: call.toolCallId,
          delta: event.delta,
          ...attributed(call.owner),
        },
      ]
    },

    'tool-input-available'(model, event, at) {
      const out: AgUiEvent[] = []
      const known = model.calls.get(event.id)
      if (!known || known.ended) out.push(...model.startCall(event.id, event.name, at.seq))
      const call = model.calls.get(event.id)!
      if (!call.streamed) {
        out.push({
          type: EventType.TOOL_CALL_ARGS,
          toolCallId: call.toolCallId,
          delta: JSON.stringify(event.input ?? {}),
          ...attributed(call.owner),
        })
      }
      out.push(...model.endCall(call))
      return out
    },

    'tool-output': callResult,
    'tool-output-error': callResult,
    'tool-output-denied': callResult,

    'title'(model, event) {
      model.state.title = event.title
      return customEvent(model, event)
    },

    // An app's own event (the projection let it through: its name is allow-listed): its value
    // exactly as written.
    'custom'(model, event) {
      return [
        {
          type: EventType.CUSTOM,
          name: event.name,
          value: event.value,
          ...attributed(model.owner()),
        },
      ]
    },

    'text': custom,
    'elicitation': custom,
    'approval-requested': custom,
    'approval-settled': custom,
    'queue': custom,
    // AG-UI 1.0 has no source or file event: sent as CUSTOM when the app allow-lists them.
    'source': custom,
    'file': custom,
    // What the person said: the projection drops it (never the agent's output, nor a CUSTOM);
    // `MESSAGES_SNAPSHOT` gives it as the user's message (`FrameTranslator.push`).
    'user-message': () => [],
    // The agent's state: STATE_SNAPSHOT / STATE_DELTA (./agent_state.ts).
    'state': agentStateEvents,
  },
}

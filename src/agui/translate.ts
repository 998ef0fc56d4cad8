import type { Cursor } from '../sink/cursor.js'
import { FAILURE_SENTENCES, type ElicitationRequest, type StreamFrame } from '../sink/frames.js'
import { encodeAgUiId } from './ids.js'

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
}

/** An AG-UI 1.0 interrupt (`RUN_FINISHED.outcome.interrupts[]`). */
export interface AgUiInterrupt {
  id: string
  reason: 'tool_call' | 'input_required'
  message?: string
  toolCallId?: string
  responseSchema?: Record<string, unknown>
  expiresAt?: string
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

/** What a failed tool call's result says unless the app opts in to the error text. */
export const TOOL_FAILED_SENTENCE = 'The tool call failed.'
/** What a declined tool call's result says. */
export const TOOL_DECLINED_SENTENCE = 'The person declined this tool call; it did not run.'

/**
 * Stored frames in, AG-UI 1.0 events out (agui-conformance.md section 1): the same for a live
 * stream and a replay. PURE: no I/O, no clock; every id comes from the frames' stored positions.
 *
 * Covered: text (`TEXT_MESSAGE_*`, opened lazily, closed before anything else), steps, tool calls
 * (`TOOL_CALL_START/ARGS/END` with `parentMessageId`, `TOOL_CALL_RESULT` with its own message id;
 * failed and declined calls get fixed sentences), `error` -> `RUN_ERROR`, allow-listed `CUSTOM`.
 * Not yet: reasoning, activities, interrupts, sub-agents (issue 4).
 */
export class FrameTranslator {
  #text: { messageId: string } | null = null
  /** The assistant message the current calls belong to (the last text message). */
  #lastMessageId: string | null = null
  #steps: string[] = []
  /** Open tool calls by provider call id: their AG-UI id and whether ARGS were streamed. */
  #calls = new Map<string, { toolCallId: string; n: number; streamed: boolean; ended: boolean }>()
  #custom: Record<string, string[]>
  #interrupts: AgUiInterrupt[] = []

  constructor(readonly options: TranslatorOptions) {
    this.#custom = options.custom ?? { title: ['title'] }
  }

  #id(kind: Parameters<typeof encodeAgUiId>[0]['kind'], n: number, address: string[] = []) {
    return encodeAgUiId({ runId: this.options.streamRunId, kind, n, address })
  }

  /** Translate one delivered frame at `at` (its cursor). */
  push(frame: StreamFrame, at: Cursor): AgUiEvent[] {
    const out: AgUiEvent[] = []
    if (frame.t === 'text') {
      if (frame.v.length === 0) return out
      if (!this.#text) {
        const messageId = this.#id('msg', at.seq)
        this.#text = { messageId }
        this.#lastMessageId = messageId
        out.push({ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' })
      }
      out.push({ type: 'TEXT_MESSAGE_CONTENT', messageId: this.#text.messageId, delta: frame.v })
      return out
    }
    out.push(...this.#closeText())
    if (frame.t === 'error') {
      out.push({
        type: 'RUN_ERROR',
        code: frame.code,
        message: FAILURE_SENTENCES[frame.code] ?? FAILURE_SENTENCES.run_failed,
      })
      return out
    }
    if (frame.t === 'approval') {
      const call = this.#calls.get(frame.id)
      this.#interrupts.push({
        id: this.#id('int', at.seq, [frame.runId, frame.id]),
        reason: 'tool_call',
        ...(call ? { toolCallId: call.toolCallId } : {}),
        ...(typeof frame.confirmation?.title === 'string'
          ? { message: frame.confirmation.title }
          : {}),
        ...(frame.expiresAt ? { expiresAt: frame.expiresAt } : {}),
      })
      return out
    }
    if (frame.t === 'elicitation') {
      this.#interrupts.push({
        id: this.#id('int', at.seq, [frame.runId, frame.id]),
        reason: 'input_required',
        ...(frame.request.preamble ? { message: frame.request.preamble } : {}),
        responseSchema: questionSetSchema(frame.request),
      })
      return out
    }
    if (frame.t !== 'event') return out
    const event = frame.event
    switch (event.kind) {
      case 'step-start': {
        const stepName = `step-${at.seq}`
        this.#steps.push(stepName)
        out.push({ type: 'STEP_STARTED', stepName })
        break
      }
      case 'step-finish': {
        const stepName = this.#steps.pop()
        if (stepName) out.push({ type: 'STEP_FINISHED', stepName })
        break
      }
      case 'tool-input-start':
        out.push(...this.#startCall(event.id, event.name, at.seq))
        break
      case 'tool-input-delta': {
        const call = this.#calls.get(event.id)
        if (call && !call.ended && event.delta) {
          call.streamed = true
          out.push({ type: 'TOOL_CALL_ARGS', toolCallId: call.toolCallId, delta: event.delta })
        }
        break
      }
      case 'tool-input-available': {
        if (!this.#calls.has(event.id)) out.push(...this.#startCall(event.id, event.name, at.seq))
        const call = this.#calls.get(event.id)!
        if (!call.ended) {
          if (!call.streamed) {
            out.push({
              type: 'TOOL_CALL_ARGS',
              toolCallId: call.toolCallId,
              delta: JSON.stringify(event.input ?? {}),
            })
          }
          out.push({ type: 'TOOL_CALL_END', toolCallId: call.toolCallId })
          call.ended = true
        }
        break
      }
      case 'tool-output':
      case 'tool-output-error':
      case 'tool-output-denied': {
        const call = this.#calls.get(event.id)
        if (!call) break
        if (!call.ended) {
          out.push({ type: 'TOOL_CALL_END', toolCallId: call.toolCallId })
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
        })
        this.#calls.delete(event.id)
        break
      }
      default: {
        const fields = this.#custom[event.kind]
        if (fields) {
          const value: Record<string, unknown> = {}
          for (const field of fields) {
            const v = (event as Record<string, unknown>)[field]
            if (v !== undefined) value[field] = v
          }
          out.push({ type: 'CUSTOM', name: event.kind, value })
        }
      }
    }
    return out
  }

  /**
   * How the segment ends, for `RUN_FINISHED.outcome`: the interrupts it parked on, or success.
   * Call after {@link finish}.
   */
  outcome(): { type: 'success' } | { type: 'interrupt'; interrupts: AgUiInterrupt[] } {
    return this.#interrupts.length > 0
      ? { type: 'interrupt', interrupts: [...this.#interrupts] }
      : { type: 'success' }
  }

  /** Close every open construct (before a run ends): text, tool calls, steps. */
  finish(): AgUiEvent[] {
    const out = this.#closeText()
    for (const call of this.#calls.values()) {
      if (!call.ended) out.push({ type: 'TOOL_CALL_END', toolCallId: call.toolCallId })
      call.ended = true
    }
    while (this.#steps.length > 0) out.push({ type: 'STEP_FINISHED', stepName: this.#steps.pop()! })
    return out
  }

  #startCall(callId: string, name: string, seq: number): AgUiEvent[] {
    // The provider's id is not unique in a run (reused across iterations): the AG-UI id is
    // minted from the stored position, with the provider's id as the address.
    const toolCallId = this.#id('tool', seq, [callId])
    this.#calls.set(callId, { toolCallId, n: seq, streamed: false, ended: false })
    return [
      {
        type: 'TOOL_CALL_START',
        toolCallId,
        toolCallName: name,
        ...(this.#lastMessageId ? { parentMessageId: this.#lastMessageId } : {}),
      },
    ]
  }

  #closeText(): AgUiEvent[] {
    if (!this.#text) return []
    const messageId = this.#text.messageId
    this.#text = null
    return [{ type: 'TEXT_MESSAGE_END', messageId }]
  }
}

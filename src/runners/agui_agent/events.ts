import { EventType, type BaseEvent, type Interrupt } from '@ag-ui/core'
import type { StreamFrame } from '../../core/frames.js'
import type { SharedStateMirror } from './shared_state.js'

/** The longest name a `custom` event frame takes (the sink's rule; longer ones are skipped). */
const CUSTOM_NAME_MAX = 191

/** How the agent's run ended, as its terminal event said. */
export type RunEnd =
  | { type: 'success' }
  | { type: 'interrupt'; interrupts: Interrupt[] }
  | { type: 'cancelled' }
  | { type: 'error' }
  /** The stream ended without `RUN_FINISHED` or `RUN_ERROR`. */
  | { type: 'none' }

/** A tool call the agent streamed: its name and the arguments as far as they came. */
export interface StreamedCall {
  name: string
  args: string
  ended: boolean
}

/** The arguments of a call as JSON: `{}` when empty, the text itself when it is not JSON. */
export function parseArgs(args: string): unknown {
  if (args.trim() === '') return {}
  try {
    return JSON.parse(args)
  } catch {
    return args
  }
}

/** A tool result's content as stored: its JSON when it is JSON text, else as sent. */
function resultOutput(content: unknown): unknown {
  if (typeof content !== 'string') return content ?? null
  try {
    return JSON.parse(content)
  } catch {
    return content
  }
}

/**
 * AG-UI events in, frames out (PURE: no I/O, no clock), the reverse of the package's AG-UI
 * translator (`src/agui/translate`). Events arrive as the client's `runAgent` pipeline hands them
 * (chunks expanded, `THINKING_*` translated to `REASONING_*`, the order verified):
 *
 * | event | frames |
 * | --- | --- |
 * | `TEXT_MESSAGE_CONTENT` (an assistant message) | `text` |
 * | `TOOL_CALL_START` / `_ARGS` / `_END` | `tool-input-start` / `-delta` / `-available` (arguments parsed) |
 * | `TOOL_CALL_RESULT` | `tool-output` (JSON content parsed), once per call |
 * | `REASONING_MESSAGE_*` | one `reasoning` event per message, when it ends |
 * | `STEP_STARTED` / `STEP_FINISHED` | `step-start` / `step-finish` |
 * | `STATE_SNAPSHOT` / `STATE_DELTA` | event `state` `{ snapshot }` / `{ delta }` ({@link SharedStateMirror}) |
 * | `CUSTOM` | event `custom` `{ name, value }` (a name of 1 to 191 characters; others skipped) |
 * | `RUN_FINISHED` / `RUN_ERROR` | nothing: the run's end ({@link end}) |
 *
 * Skipped: `TEXT_MESSAGE_START`/`_END` (text frames need no bounds), messages of another role,
 * `MESSAGES_SNAPSHOT`
 * (the frames are the record), `ACTIVITY_*`, `RAW`, `REASONING_ENCRYPTED_VALUE`, `SUBAGENT_*`
 * (a sub-agent's frames stay the run's own), and any event type this version does not know.
 */
export class AgUiEventReader {
  /** Tool calls by id, as streamed in this segment. */
  readonly calls = new Map<string, StreamedCall>()
  /** Calls that have their result (streamed, or settled before this segment): no second one. */
  readonly answered: Set<string>
  #roles = new Map<string, string>()
  #reasoning = new Map<string, string>()
  #end: RunEnd = { type: 'none' }
  /** The `RUN_ERROR` the agent sent, for the app's `onError` (never a reader's). */
  error: { message: string; code?: string } | null = null

  /**
   * @param answered calls whose result is stored already (a second result is not written)
   * @param known calls stored already, by id (the agent streaming one again writes nothing)
   * @param state the agent's state both ways (without it, `STATE_*` events are skipped)
   */
  constructor(
    answered: Iterable<string> = [],
    known: Map<string, StreamedCall> = new Map(),
    readonly state?: SharedStateMirror
  ) {
    this.answered = new Set(answered)
    for (const [id, call] of known) this.calls.set(id, { ...call, ended: true })
  }

  /** How the run ended (`none` until a terminal event came). */
  get end(): RunEnd {
    return this.#end
  }

  /** The frames of one event. */
  push(event: BaseEvent): StreamFrame[] {
    const e = event as BaseEvent & Record<string, any>
    switch (event.type) {
      case EventType.TEXT_MESSAGE_START:
        this.#roles.set(e.messageId, e.role ?? 'assistant')
        return []
      case EventType.TEXT_MESSAGE_CONTENT: {
        const role = this.#roles.get(e.messageId) ?? 'assistant'
        if (role !== 'assistant' || typeof e.delta !== 'string' || e.delta.length === 0) return []
        return [{ t: 'text', v: e.delta }]
      }
      case EventType.TOOL_CALL_START: {
        if (this.calls.has(e.toolCallId) || this.answered.has(e.toolCallId)) return []
        this.calls.set(e.toolCallId, { name: e.toolCallName, args: '', ended: false })
        return [
          {
            t: 'event',
            event: {
              kind: 'tool-input-start',
              id: e.toolCallId,
              name: e.toolCallName,
              toolKind: 'read',
            },
          },
        ]
      }
      case EventType.TOOL_CALL_ARGS: {
        const call = this.calls.get(e.toolCallId)
        if (!call || call.ended || !e.delta) return []
        call.args += e.delta
        return [
          { t: 'event', event: { kind: 'tool-input-delta', id: e.toolCallId, delta: e.delta } },
        ]
      }
      case EventType.TOOL_CALL_END: {
        const call = this.calls.get(e.toolCallId)
        if (!call || call.ended) return []
        call.ended = true
        return [
          {
            t: 'event',
            event: {
              kind: 'tool-input-available',
              id: e.toolCallId,
              name: call.name,
              input: parseArgs(call.args),
              toolKind: 'read',
            },
          },
        ]
      }
      case EventType.TOOL_CALL_RESULT: {
        if (this.answered.has(e.toolCallId)) return []
        this.answered.add(e.toolCallId)
        return [
          {
            t: 'event',
            event: { kind: 'tool-output', id: e.toolCallId, output: resultOutput(e.content) },
          },
        ]
      }
      case EventType.REASONING_MESSAGE_START:
        this.#reasoning.set(e.messageId, '')
        return []
      case EventType.REASONING_MESSAGE_CONTENT:
        if (this.#reasoning.has(e.messageId) && typeof e.delta === 'string') {
          this.#reasoning.set(e.messageId, this.#reasoning.get(e.messageId) + e.delta)
        }
        return []
      case EventType.REASONING_MESSAGE_END: {
        const text = this.#reasoning.get(e.messageId)
        this.#reasoning.delete(e.messageId)
        return text ? [{ t: 'event', event: { kind: 'reasoning', text } }] : []
      }
      case EventType.STEP_STARTED:
        return [{ t: 'event', event: { kind: 'step-start' } }]
      case EventType.STEP_FINISHED:
        return [{ t: 'event', event: { kind: 'step-finish' } }]
      case EventType.STATE_SNAPSHOT:
        return this.state?.snapshot(e.snapshot) ?? []
      case EventType.STATE_DELTA:
        return this.state?.delta(e.delta) ?? []
      case EventType.CUSTOM: {
        const name = typeof e.name === 'string' ? e.name : ''
        if (name.length === 0 || name.length > CUSTOM_NAME_MAX) return []
        return [{ t: 'event', event: { kind: 'custom', name, value: e.value ?? null } }]
      }
      case EventType.RUN_FINISHED: {
        const outcome = e.outcome as { type?: string; interrupts?: Interrupt[] } | undefined
        if (outcome?.type === 'interrupt' && Array.isArray(outcome.interrupts)) {
          this.#end = { type: 'interrupt', interrupts: outcome.interrupts }
        } else if (outcome?.type === 'cancelled') {
          this.#end = { type: 'cancelled' }
        } else {
          this.#end = { type: 'success' }
        }
        return []
      }
      case EventType.RUN_ERROR:
        this.#end = { type: 'error' }
        this.error = {
          message: String(e.message ?? ''),
          ...(e.code ? { code: String(e.code) } : {}),
        }
        return []
      default:
        return []
    }
  }
}

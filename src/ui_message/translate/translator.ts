import type { UIMessageChunk } from 'ai'
import type { Cursor } from '../../core/cursor.js'
import type { AgentStreamEvent, StreamFrame } from '../../core/frames.js'
import { publicFrame, type ProjectionRules } from '../../core/projection.js'
import { approvalId, reasoningPartId, textPartId } from './ids.js'
import { applyStateEvent, type AgentState } from '../../core/agent_state.js'

/** The type and id of the data part that carries the agent's state (`state` frames). */
export const STATE_PART = { type: 'data-state', id: 'state' } as const

/** A chunk of the AI SDK's UI message stream (`ai`'s `UIMessageChunk`, a type only). */
export type UiChunk = UIMessageChunk

/** The `tool-output-error` of an approved call whose run ended without its result. */
const NO_RESULT = "The run ended without this tool call's result."

/** How a segment ended, as the `finish` chunk's `finishReason` says. */
export type TurnEnd = 'stop' | 'tool-calls' | 'error' | 'other'

/** What the translator keeps between frames (JSON-safe). */
interface State {
  /** The open text part's id, if any. */
  text: string | null
  reasoning: string | null
  /**
   * Tool calls the client has a part for and that have no result yet, by call id: their
   * approval id once asked; `awaiting` once approved. A call's entry goes with its result (or
   * the `tool-output-error` a turn's end gives an approved call without one): the state holds
   * the calls still open, not every call of the run.
   */
  calls: Record<string, { approval?: string; awaiting?: true }>
  /** Calls whose input is streaming (a `tool-input-start` was sent, no `available` yet). */
  streaming: Record<string, true>
  failed: boolean
  cancelled: boolean
  /** The segment being read asked for an approval or answers (reset at each segment end). */
  parked: boolean
  /** The agent's state as its `state` frames left it (absent: none yet; at most `maxStateBytes`). */
  agentState?: AgentState
}

/**
 * Frames in, AI SDK UI message chunks out (the UI message stream protocol of `ai` 7). PURE: no
 * I/O, no clock. Every frame first goes through the one public projection
 * (`core/projection.ts`, invariant 8, docs/design.md), with the same rules as the AG-UI door.
 *
 * | frame | chunks |
 * | --- | --- |
 * | `text`, event `text` | `text-start` (when none is open), `text-delta` |
 * | event `reasoning` (when `reasoning` is on) | `reasoning-start` (when none is open), `reasoning-delta` |
 * | `tool-input-start` / `-delta` / `-available` | the same chunks (`toolCallId` = the frame's `id`) |
 * | `tool-output` / `-error` / `-denied` | `tool-output-available` / `-error` / `-denied` |
 * | `approval` | `tool-input-available` (unless sent), `tool-approval-request` (`approval-<seq>`) |
 * | event `approval-settled` | `tool-approval-response` |
 * | `elicitation` | `tool-input-available` of the dynamic tool `elicitation` (input: the request) |
 * | `component`, event `ui` | `data-<name>` with the component's id (a later one replaces it) |
 * | `source` / `file` | `source-url` or `source-document` / `file` |
 * | `step-start` / `step-finish` | `start-step` / `finish-step` |
 * | `subagent-start` / `-finish` | `data-subagent` (id: the child's run id) |
 * | event `title` | `message-metadata` `{ title }` |
 * | event `state` (the agent's state) | `data-state` (id `state`): the whole state after it |
 * | `error` | `error` (its code's fixed sentence) |
 * | `cancelled` | `abort` |
 * | a segment end | `text-end` / `reasoning-end` of what is open, then `finish` (see {@link end}) |
 * | the turn's end | also `tool-output-error` for an approved call that got no result |
 *
 * Other known kinds (`approval-requested`, `queue`) carry nothing the UI stream has a chunk for.
 * Unknown kinds the app allow-lists (`custom`) become `data-<kind>` with the allowed fields; a
 * `custom` event whose name the app allow-lists (`customEvents`), `data-<name>` with its value.
 */
export class UiMessageTranslator {
  #s: State = {
    text: null,
    reasoning: null,
    calls: {},
    streaming: {},
    failed: false,
    cancelled: false,
    parked: false,
  }

  constructor(readonly rules: ProjectionRules = {}) {}

  /** Whether the stream failed (an `error` frame was seen). */
  get failed() {
    return this.#s.failed
  }

  /**
   * What this translator knows after the frames pushed so far, as JSON a translator with the
   * same rules can resume from ({@link restore}): the useChat door's re-attach checkpoints
   * (`src/checkpoints`). Small, whatever the run's length: the open parts and flags, plus one
   * entry per tool call the client has a part for that has no result yet (its result or an
   * approval's answer may come any time later; a result for a call it has no part of would
   * break the client's message, so a second result of a call is not sent either).
   */
  checkpoint(): string {
    return JSON.stringify(this.#s)
  }

  /** Continue from a {@link checkpoint}, as if the frames before it had been pushed here. */
  restore(checkpoint: string) {
    this.#s = JSON.parse(checkpoint)
  }

  /** The chunks of one stored frame, delivered at `at` (its cursor). */
  push(frame: StreamFrame, at: Cursor): UiChunk[] {
    const projected = publicFrame(frame, this.rules)
    if (!projected) return []
    const s = this.#s
    switch (projected.t) {
      case 'text':
        return this.#text(projected.v, at.seq)
      case 'error':
        s.failed = true
        return [...this.#close(), { type: 'error', errorText: projected.message }]
      case 'component': {
        if (projected.partial && projected.id === undefined) return []
        return [
          ...this.#close(),
          {
            type: `data-${projected.name}`,
            ...(projected.id ? { id: projected.id } : {}),
            data: projected.data,
          } as UiChunk,
        ]
      }
      case 'approval': {
        const out = this.#close()
        if (!s.calls[projected.id]) {
          out.push({
            type: 'tool-input-available',
            toolCallId: projected.id,
            toolName: projected.toolName,
            input: projected.input,
          })
        }
        const id = approvalId(at.seq)
        s.calls[projected.id] = { approval: id }
        delete s.streaming[projected.id]
        const reason = projected.confirmation?.title
        out.push({
          type: 'tool-approval-request',
          approvalId: id,
          toolCallId: projected.id,
          ...(typeof reason === 'string' ? { reason } : {}),
        })
        s.parked = true
        return out
      }
      case 'elicitation': {
        const out = this.#close()
        s.calls[projected.id] = {}
        out.push({
          type: 'tool-input-available',
          toolCallId: projected.id,
          toolName: 'elicitation',
          dynamic: true,
          input: projected.request as never,
        })
        s.parked = true
        return out
      }
      case 'event':
        return this.#event(projected.event, at.seq)
    }
    return []
  }

  /**
   * A segment ended: close what is open, then `finish` with why it ended: `tool-calls` when it
   * parked on an approval or a question set, `error` after an `error` frame, `other` when it was
   * cancelled, `stop` otherwise. `finish: false` only closes (a segment the stream goes on from).
   * Unless it parked again, a `tool-output-error` first for each approved call with no result.
   */
  end(finish = true): UiChunk[] {
    const out = this.#close()
    const s = this.#s
    // Whether THIS segment parked: an ask is followed by more frames of its segment (the AI
    // SDK's `finish-step`, sibling calls), never by another segment's.
    const parked = s.parked
    s.parked = false
    // A segment's end ends the inputs it was streaming (none goes on in another segment).
    s.streaming = {}
    if (!finish) return out
    // The turn is over (not parked again): an approved call that never got its result would
    // stay `approval-responded` on the client, which `useChat` sends back to be run, for ever.
    if (!parked) {
      for (const [id, call] of Object.entries(s.calls)) {
        if (!call.awaiting) continue
        delete s.calls[id]
        out.push({ type: 'tool-output-error', toolCallId: id, errorText: NO_RESULT })
      }
    }
    const reason: TurnEnd = s.failed
      ? 'error'
      : s.cancelled
        ? 'other'
        : parked
          ? 'tool-calls'
          : 'stop'
    out.push({ type: 'finish', finishReason: reason })
    return out
  }

  #text(delta: string, seq: number): UiChunk[] {
    const s = this.#s
    const out: UiChunk[] = []
    if (s.reasoning) out.push(...this.#closeReasoning())
    if (!s.text) {
      s.text = textPartId(seq)
      out.push({ type: 'text-start', id: s.text })
    }
    if (delta.length > 0) out.push({ type: 'text-delta', id: s.text, delta })
    return out
  }

  #closeText(): UiChunk[] {
    const id = this.#s.text
    this.#s.text = null
    return id ? [{ type: 'text-end', id }] : []
  }

  #closeReasoning(): UiChunk[] {
    const id = this.#s.reasoning
    this.#s.reasoning = null
    return id ? [{ type: 'reasoning-end', id }] : []
  }

  #close(): UiChunk[] {
    return [...this.#closeText(), ...this.#closeReasoning()]
  }

  /** A call the client has a part for: a result for any other would break its message. */
  #known(id: string) {
    return Object.hasOwn(this.#s.calls, id)
  }

  #event(event: AgentStreamEvent, seq: number): UiChunk[] {
    const s = this.#s
    switch (event.kind) {
      case 'text':
        return this.#text(event.text, seq)
      case 'reasoning': {
        const out = this.#closeText()
        if (!s.reasoning) {
          s.reasoning = reasoningPartId(seq)
          out.push({ type: 'reasoning-start', id: s.reasoning })
        }
        out.push({ type: 'reasoning-delta', id: s.reasoning, delta: event.text })
        return out
      }
      case 'step-start':
        return [...this.#close(), { type: 'start-step' }]
      case 'step-finish':
        return [...this.#close(), { type: 'finish-step' }]
      case 'tool-input-start':
        if (this.#known(event.id)) return []
        s.streaming[event.id] = true
        return [
          ...this.#close(),
          { type: 'tool-input-start', toolCallId: event.id, toolName: event.name },
        ]
      case 'tool-input-delta':
        if (!s.streaming[event.id]) return []
        return [{ type: 'tool-input-delta', toolCallId: event.id, inputTextDelta: event.delta }]
      case 'tool-input-available':
        delete s.streaming[event.id]
        s.calls[event.id] = s.calls[event.id] ?? {}
        return [
          ...this.#close(),
          {
            type: 'tool-input-available',
            toolCallId: event.id,
            toolName: event.name,
            input: event.input,
          },
        ]
      case 'tool-output':
        if (!this.#known(event.id)) return []
        delete s.calls[event.id]
        return [
          ...this.#close(),
          { type: 'tool-output-available', toolCallId: event.id, output: event.output },
        ]
      case 'tool-output-error':
        if (!this.#known(event.id)) return []
        delete s.calls[event.id]
        return [
          ...this.#close(),
          {
            type: 'tool-output-error',
            toolCallId: event.id,
            errorText: typeof event.error === 'string' ? event.error : JSON.stringify(event.error),
          },
        ]
      case 'tool-output-denied':
        if (!this.#known(event.id)) return []
        delete s.calls[event.id]
        return [...this.#close(), { type: 'tool-output-denied', toolCallId: event.id }]
      case 'approval-settled': {
        const id = s.calls[event.id]?.approval
        if (!id) return []
        if (event.status === 'approved') s.calls[event.id].awaiting = true
        return [
          {
            type: 'tool-approval-response',
            approvalId: id,
            approved: event.status === 'approved',
            ...(event.reason ? { reason: event.reason } : {}),
          },
        ]
      }
      case 'ui':
        return [
          ...this.#close(),
          { type: `data-${event.component}`, id: event.id, data: event.props } as UiChunk,
        ]
      case 'source':
        if (event.sourceType === 'url' && event.url) {
          return [
            ...this.#close(),
            {
              type: 'source-url',
              sourceId: event.id,
              url: event.url,
              ...(event.title ? { title: event.title } : {}),
            },
          ]
        }
        if (event.sourceType === 'document') {
          return [
            ...this.#close(),
            {
              type: 'source-document',
              sourceId: event.id,
              mediaType: event.mediaType ?? 'application/octet-stream',
              title: event.title ?? '',
              ...(event.filename ? { filename: event.filename } : {}),
            },
          ]
        }
        return []
      case 'file':
        return [...this.#close(), { type: 'file', url: event.url, mediaType: event.mediaType }]
      case 'subagent-start':
        return [
          ...this.#close(),
          {
            type: 'data-subagent',
            id: event.runId,
            data: { runId: event.runId, name: event.name ?? 'agent', status: 'running' },
          },
        ]
      case 'subagent-finish':
        return [
          ...this.#close(),
          {
            type: 'data-subagent',
            id: event.runId,
            data: { runId: event.runId, status: event.status ?? 'success' },
          },
        ]
      case 'title':
        return [{ type: 'message-metadata', messageMetadata: { title: event.title } }]
      case 'cancelled':
        s.cancelled = true
        return [...this.#close(), { type: 'abort', reason: 'cancelled' }]
      case 'state': {
        // The whole state each time, under one id: the client's part is replaced, so a client
        // that re-attaches anywhere holds what one that never left holds.
        const next = applyStateEvent(s.agentState ?? null, event, Number.POSITIVE_INFINITY)
        if ('rule' in next) return []
        s.agentState = next.state
        return [{ ...STATE_PART, data: structuredClone(next.state) } as UiChunk]
      }
      case 'custom':
        // An app's own event whose name is allow-listed (`customEvents`): its value as written.
        return [{ type: `data-${event.name}`, data: event.value } as UiChunk]
      case 'elicitation':
      case 'approval-requested':
      case 'queue':
        return []
      default: {
        // An unknown kind the app allow-listed (the projection kept it): a data part.
        const { kind, ...fields } = event as { kind: string }
        return [{ type: `data-${kind}`, data: fields } as UiChunk]
      }
    }
  }
}

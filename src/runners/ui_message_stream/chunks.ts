import type { UIMessageChunk } from 'ai'
import type { StreamFrame, ToolConfirmation } from '../../core/frames.js'

/** How approvals are asked (the `approval` frame's fields). */
export interface ApprovalOptions {
  /** Who may decide: `'requester'` (the default) or a role; per call when a function. */
  approver?: string | ((call: { toolName: string; input: unknown }) => string)
  /** The request lapses this long after it is asked, in milliseconds. Default: never. */
  expiresInMs?: number
  /** Display copy. Default: `{ title: <the request's reason> }`, else `Run <toolName>?`. */
  confirmation?: (call: { toolName: string; input: unknown }) => ToolConfirmation
}

/**
 * What a `tool-approval-request` chunk said, kept in the checkpoint: the resume hands it back
 * in the tool part's `approval` (`approval-responded`), as `useChat` keeps it.
 */
export interface AskedApproval {
  id: string
  signature?: string
  descriptor?: unknown
  requestReason?: string
  inputSchemaInput?: unknown
}

/** A call the stream announced: its name and input (once available). */
export interface ChunkCall {
  name: string
  input?: unknown
}

/**
 * AI SDK UI message chunks in, frames out (PURE: no I/O, no clock; the clock's `now` is given),
 * the reverse of the useChat door's translator (`src/ui_message/translate`):
 *
 * | chunk | frames |
 * | --- | --- |
 * | `text-delta` | `text` |
 * | `reasoning-delta` ... `reasoning-end` | one `reasoning` event per part |
 * | `tool-input-start` / `-delta` / `-available` | the same events (`id` = `toolCallId`) |
 * | `tool-input-error` | `tool-input-available`, then `tool-output-error` |
 * | `tool-output-available` (not preliminary) / `-error` / `-denied` | `tool-output` / `-error` / `-denied` |
 * | `tool-approval-request` (not automatic) | an `approval` under the call's id (parks) |
 * | `start-step` / `finish-step` | `step-start` / `step-finish` |
 * | `source-url` / `source-document` / `file` | `source` / `file` events |
 * | `data-<name>` (not transient) | a `component` frame (`name`, `data`, its `id`) |
 * | `error` | nothing written: the run fails with a fixed sentence ({@link failed}) |
 * | `abort` | nothing written: the run is cancelled |
 *
 * Skipped: `start`, `finish`, `message-metadata`, `text-start`/`-end`, `reasoning-start`,
 * `tool-approval-response` (the decision is stored by parking), `custom`, `reasoning-file`,
 * `steering-message`, `reset-step` (what is stored stays) and any type this version does not know.
 */
export class UiChunkReader {
  readonly calls = new Map<string, ChunkCall>()
  readonly answered: Set<string>
  /** The approvals asked in this segment, by call id. */
  readonly asked = new Map<string, AskedApproval>()
  #reasoning = new Map<string, string>()
  /** The `error` chunks' texts, for the app's `onError` (never a reader's). */
  readonly errors: string[] = []
  aborted = false

  /**
   * @param answered calls whose result is stored already (a second result is not written)
   * @param known calls stored already (the stream announcing one again writes nothing)
   */
  constructor(
    readonly runId: string,
    readonly approval: ApprovalOptions = {},
    answered: Iterable<string> = [],
    known: Map<string, ChunkCall> = new Map()
  ) {
    this.answered = new Set(answered)
    for (const [id, call] of known) this.calls.set(id, call)
    this.#known = new Set(known.keys())
  }

  #known: Set<string>

  get failed() {
    return this.errors.length > 0
  }

  #result(id: string, frame: StreamFrame): StreamFrame[] {
    if (this.answered.has(id)) return []
    this.answered.add(id)
    return [frame]
  }

  push(chunk: UIMessageChunk, now = Date.now()): StreamFrame[] {
    const c = chunk as UIMessageChunk & Record<string, any>
    switch (chunk.type) {
      case 'text-delta':
        return c.delta ? [{ t: 'text', v: c.delta }] : []
      case 'reasoning-start':
        this.#reasoning.set(c.id, '')
        return []
      case 'reasoning-delta':
        this.#reasoning.set(c.id, (this.#reasoning.get(c.id) ?? '') + (c.delta ?? ''))
        return []
      case 'reasoning-end': {
        const text = this.#reasoning.get(c.id)
        this.#reasoning.delete(c.id)
        return text ? [{ t: 'event', event: { kind: 'reasoning', text } }] : []
      }
      case 'start-step':
        return [{ t: 'event', event: { kind: 'step-start' } }]
      case 'finish-step':
        return [{ t: 'event', event: { kind: 'step-finish' } }]
      case 'tool-input-start':
        if (this.calls.has(c.toolCallId)) return []
        this.calls.set(c.toolCallId, { name: c.toolName })
        return [
          {
            t: 'event',
            event: {
              kind: 'tool-input-start',
              id: c.toolCallId,
              name: c.toolName,
              toolKind: 'read',
            },
          },
        ]
      case 'tool-input-delta':
        if (this.#known.has(c.toolCallId) || !this.calls.has(c.toolCallId) || !c.inputTextDelta) {
          return []
        }
        return [
          {
            t: 'event',
            event: { kind: 'tool-input-delta', id: c.toolCallId, delta: c.inputTextDelta },
          },
        ]
      case 'tool-input-available':
      case 'tool-input-error': {
        if (this.#known.has(c.toolCallId)) return []
        this.#known.add(c.toolCallId)
        this.calls.set(c.toolCallId, { name: c.toolName, input: c.input ?? {} })
        const frames: StreamFrame[] = [
          {
            t: 'event',
            event: {
              kind: 'tool-input-available',
              id: c.toolCallId,
              name: c.toolName,
              input: c.input ?? {},
              toolKind: 'read',
            },
          },
        ]
        if (chunk.type === 'tool-input-error') {
          frames.push(
            ...this.#result(c.toolCallId, {
              t: 'event',
              event: { kind: 'tool-output-error', id: c.toolCallId, error: String(c.errorText) },
            })
          )
        }
        return frames
      }
      case 'tool-output-available':
        if (c.preliminary) return []
        return this.#result(c.toolCallId, {
          t: 'event',
          event: { kind: 'tool-output', id: c.toolCallId, output: c.output ?? null },
        })
      case 'tool-output-error':
        return this.#result(c.toolCallId, {
          t: 'event',
          event: { kind: 'tool-output-error', id: c.toolCallId, error: String(c.errorText) },
        })
      case 'tool-output-denied':
        return this.#result(c.toolCallId, {
          t: 'event',
          event: { kind: 'tool-output-denied', id: c.toolCallId, status: 'rejected' },
        })
      case 'tool-approval-request': {
        if (c.isAutomatic || this.asked.has(c.toolCallId) || this.answered.has(c.toolCallId)) {
          return []
        }
        const call = this.calls.get(c.toolCallId)
        const toolName = call?.name || 'tool'
        const input = call?.input ?? {}
        this.asked.set(c.toolCallId, {
          id: c.approvalId,
          ...(c.signature ? { signature: c.signature } : {}),
          ...(c.approvalDescriptor !== undefined ? { descriptor: c.approvalDescriptor } : {}),
          ...(c.reason ? { requestReason: c.reason } : {}),
          ...(c.inputSchemaInput !== undefined ? { inputSchemaInput: c.inputSchemaInput } : {}),
        })
        const approver = this.approval.approver
        return [
          {
            t: 'approval',
            runId: this.runId,
            id: c.toolCallId,
            toolName,
            input,
            confirmation: this.approval.confirmation?.({ toolName, input }) ?? {
              title: typeof c.reason === 'string' && c.reason ? c.reason : `Run ${toolName}?`,
            },
            approver:
              typeof approver === 'function'
                ? approver({ toolName, input })
                : (approver ?? 'requester'),
            ...(this.approval.expiresInMs
              ? { expiresAt: new Date(now + this.approval.expiresInMs).toISOString() }
              : {}),
          },
        ]
      }
      case 'source-url':
        return [
          {
            t: 'event',
            event: {
              kind: 'source',
              id: c.sourceId,
              sourceType: 'url',
              url: c.url,
              ...(c.title ? { title: c.title } : {}),
            },
          },
        ]
      case 'source-document':
        return [
          {
            t: 'event',
            event: {
              kind: 'source',
              id: c.sourceId,
              sourceType: 'document',
              title: c.title,
              mediaType: c.mediaType,
              ...(c.filename ? { filename: c.filename } : {}),
            },
          },
        ]
      case 'file':
        return [{ t: 'event', event: { kind: 'file', mediaType: c.mediaType, url: c.url } }]
      case 'error':
        this.errors.push(String(c.errorText ?? ''))
        return []
      case 'abort':
        this.aborted = true
        return []
      default:
        if (typeof c.type === 'string' && c.type.startsWith('data-') && c.type.length > 5) {
          if (c.transient) return []
          return [
            {
              t: 'component',
              name: c.type.slice(5),
              data: c.data ?? null,
              ...(typeof c.id === 'string' && c.id ? { id: c.id } : {}),
            },
          ]
        }
        return []
    }
  }
}

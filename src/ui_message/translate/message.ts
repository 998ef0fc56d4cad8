import type { UIMessage } from 'ai'
import type { UiChunk } from './translator.js'

type Part = Record<string, any>

/**
 * The assistant message a chunk stream builds, as `useChat` builds it (`ai` 7's
 * `readUIMessageStream`, for the chunks {@link UiMessageTranslator} sends), so a stored turn
 * loaded into `useChat({ messages })` is the message the live stream gave. PURE: `ai` is an
 * optional peer of the package, its types only are used here. Fields the SDK leaves `undefined`
 * are left out (what JSON carries).
 */
export class UiMessageBuilder {
  readonly message: UIMessage
  #texts = new Map<string, Part>()
  #reasoning = new Map<string, Part>()
  #raw = new Map<string, { text: string; toolName: string; dynamic: boolean }>()

  constructor(id: string) {
    this.message = { id, role: 'assistant', parts: [] }
  }

  get #parts(): Part[] {
    return this.message.parts as Part[]
  }

  /** The current step's parts (after its last `step-start`). */
  #step(): Part[] {
    const parts = this.#parts
    const start = parts.findLastIndex((part) => part.type === 'step-start')
    return parts.slice(start + 1)
  }

  #isTool(part: Part) {
    return part.type === 'dynamic-tool' || part.type.startsWith('tool-')
  }

  /** The tool part of a call: the current step's, else the newest with that id. */
  #tool(toolCallId: string): Part | undefined {
    return (
      this.#step().find((p) => this.#isTool(p) && p.toolCallId === toolCallId) ??
      this.#parts.findLast((p) => this.#isTool(p) && p.toolCallId === toolCallId)
    )
  }

  /** Set a tool part's state and fields (a new part when the step has none for the call). */
  #update(toolCallId: string, toolName: string, dynamic: boolean, fields: Part, existing?: Part) {
    const part =
      existing ??
      this.#step().find(
        (p) =>
          p.toolCallId === toolCallId && (dynamic ? p.type === 'dynamic-tool' : this.#isTool(p))
      )
    const next: Part = {
      input: undefined,
      output: undefined,
      errorText: undefined,
      rawInput: undefined,
      ...fields,
    }
    if (part) {
      if (dynamic) part.toolName = toolName
      else part.type = `tool-${toolName}`
      Object.assign(part, next)
      for (const key of Object.keys(part)) if (part[key] === undefined) delete part[key]
      return
    }
    const created: Part = dynamic
      ? { type: 'dynamic-tool', toolName, toolCallId, ...next }
      : { type: `tool-${toolName}`, toolCallId, ...next }
    for (const key of Object.keys(created)) if (created[key] === undefined) delete created[key]
    this.#parts.push(created)
  }

  #toolNameOf(part: Part): string {
    return part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length)
  }

  /** Fold one chunk into the message. */
  push(chunk: UiChunk) {
    const c = chunk as Part
    switch (c.type) {
      case 'start':
        if (c.messageId) this.message.id = c.messageId
        return
      case 'text-start': {
        const part = { type: 'text', text: '', state: 'streaming' }
        this.#texts.set(c.id, part)
        this.#parts.push(part)
        return
      }
      case 'text-delta': {
        const part = this.#texts.get(c.id)
        if (part) part.text += c.delta
        return
      }
      case 'text-end': {
        const part = this.#texts.get(c.id)
        if (part) part.state = 'done'
        this.#texts.delete(c.id)
        return
      }
      case 'reasoning-start': {
        const part = { type: 'reasoning', id: c.id, text: '', state: 'streaming' }
        this.#reasoning.set(c.id, part)
        this.#parts.push(part)
        return
      }
      case 'reasoning-delta': {
        const part = this.#reasoning.get(c.id)
        if (part) part.text += c.delta
        return
      }
      case 'reasoning-end': {
        const part = this.#reasoning.get(c.id)
        if (part) part.state = 'done'
        this.#reasoning.delete(c.id)
        return
      }
      case 'file':
        this.#parts.push({ type: 'file', mediaType: c.mediaType, url: c.url })
        return
      case 'source-url':
        this.#parts.push(
          defined({ type: 'source-url', sourceId: c.sourceId, url: c.url, title: c.title })
        )
        return
      case 'source-document':
        this.#parts.push(
          defined({
            type: 'source-document',
            sourceId: c.sourceId,
            mediaType: c.mediaType,
            title: c.title,
            filename: c.filename,
          })
        )
        return
      case 'tool-input-start':
        this.#raw.set(c.toolCallId, { text: '', toolName: c.toolName, dynamic: !!c.dynamic })
        this.#update(c.toolCallId, c.toolName, !!c.dynamic, { state: 'input-streaming' })
        return
      case 'tool-input-delta': {
        const raw = this.#raw.get(c.toolCallId)
        if (!raw) return
        raw.text += c.inputTextDelta
        this.#update(c.toolCallId, raw.toolName, raw.dynamic, {
          state: 'input-streaming',
          input: partialJson(raw.text),
          rawInput: raw.text,
        })
        return
      }
      case 'tool-input-available':
        this.#update(c.toolCallId, c.toolName, !!c.dynamic, {
          state: 'input-available',
          input: c.input,
        })
        return
      case 'tool-approval-request': {
        const part = this.#tool(c.toolCallId)
        if (!part) return
        part.state = 'approval-requested'
        part.approval = {
          id: c.approvalId,
          ...(c.reason !== undefined && c.reason !== null ? { requestReason: c.reason } : {}),
        }
        return
      }
      case 'tool-approval-response': {
        const part = this.#parts.find((p) => this.#isTool(p) && p.approval?.id === c.approvalId)
        if (!part) return
        part.state = 'approval-responded'
        part.approval = {
          ...(part.approval ?? {}),
          id: c.approvalId,
          approved: c.approved,
          ...(c.reason !== undefined && c.reason !== null ? { reason: c.reason } : {}),
        }
        return
      }
      case 'tool-output-denied': {
        const part = this.#tool(c.toolCallId)
        if (part) part.state = 'output-denied'
        return
      }
      case 'tool-output-available':
      case 'tool-output-error': {
        const part = this.#tool(c.toolCallId)
        if (!part) return
        const fields: Part =
          c.type === 'tool-output-available'
            ? { state: 'output-available', input: part.input, output: c.output }
            : {
                state: 'output-error',
                input: part.input,
                errorText: c.errorText,
                ...(part.type === 'dynamic-tool' ? {} : { rawInput: part.rawInput }),
              }
        const approval = part.approval
        this.#update(
          c.toolCallId,
          this.#toolNameOf(part),
          part.type === 'dynamic-tool',
          fields,
          part
        )
        if (approval) part.approval = approval
        return
      }
      case 'start-step':
        this.#parts.push({ type: 'step-start' })
        return
      case 'message-metadata':
        if (c.messageMetadata !== undefined && c.messageMetadata !== null) {
          this.message.metadata = {
            ...((this.message.metadata as object | undefined) ?? {}),
            ...c.messageMetadata,
          }
        }
        return
      default:
        if (typeof c.type === 'string' && c.type.startsWith('data-')) {
          if (c.transient) return
          const existing =
            c.id !== undefined && c.id !== null
              ? this.#parts.find((p) => p.type === c.type && p.id === c.id)
              : undefined
          if (existing) existing.data = c.data
          else this.#parts.push({ ...c })
        }
    }
  }
}

/** `value` without its `undefined` fields. */
function defined(value: Part): Part {
  for (const key of Object.keys(value)) if (value[key] === undefined) delete value[key]
  return value
}

/** A tool's streamed input so far, when it is JSON already (else left out). */
function partialJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

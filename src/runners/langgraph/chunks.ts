import { AIMessage, ToolMessage } from '@langchain/core/messages'
import type { AgentStreamEvent, StreamFrame } from '../../core/frames.js'
import type { OpenInterrupt } from './interrupts.js'

/** The event kind a custom chunk (`config.writer(...)`, stream mode `custom`) is stored as. */
export const CUSTOM_EVENT = 'langgraph-custom'

/**
 * What a custom chunk becomes: a frame (or frames) of the app's choosing, `null` to skip it.
 * Default: an `event` frame `{ kind: 'langgraph-custom', data }` (JSON only; the doors send it
 * only when `agui.custom` allow-lists the kind).
 */
export type CustomChunkMapper = (chunk: unknown) => StreamFrame | StreamFrame[] | null

/** What the chunk reader needs besides the stream. */
export interface ChunkPlan {
  write: (frame: StreamFrame) => Promise<void>
  /** Tools whose calls are actions (`toolKind: 'action'`); the others are reads. */
  actions: ReadonlySet<string>
  /** Calls whose result is stored already (a denial written when it was decided). */
  answered: ReadonlySet<string>
  /** Calls whose `tool-input-available` is stored already (an earlier segment's). */
  announced: ReadonlySet<string>
  custom?: CustomChunkMapper
}

/** JSON of `value`, or `undefined` when it has none (a function, a cycle, a BigInt). */
function json(value: unknown): unknown {
  try {
    const text = JSON.stringify(value)
    return text === undefined ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A tool result's content as the model got it: JSON when it is JSON text. */
function outputOf(content: unknown): unknown {
  if (typeof content !== 'string') return json(content) ?? null
  try {
    return JSON.parse(content)
  } catch {
    return content
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Reads the chunks of `graph.stream(input, { streamMode: ['messages', 'updates', 'custom'] })`
 * (`[mode, payload]`) and writes their frames (docs/runners/langgraph.md, the table):
 * - `messages`: an AI message's (or chunk's) text as `text`; its `tool_call_chunks` as
 *   `tool-input-start` and `tool-input-delta`;
 * - `updates`: each node's new AI messages' `tool_calls` as `tool-input-available`, its
 *   `ToolMessage`s as `tool-output` (`tool-output-error` when `status: 'error'`), and
 *   `__interrupt__` collected (the runner asks a person for each);
 * - `custom`: through {@link ChunkPlan.custom}, by default an `event` `langgraph-custom`.
 * Anything else (another mode, a payload of a shape it does not know) is skipped.
 */
export class ChunkReader {
  /** The interrupts the stream reported, by id, in order. */
  readonly interrupts = new Map<string, OpenInterrupt & { id: string }>()
  /** Tool calls the model made in this segment, in order (HITL actions are matched to them). */
  readonly calls: { id: string; name: string; args: unknown }[] = []
  #started = new Set<string>()
  #announced: Set<string>
  #answered: Set<string>
  /** A streamed message's tool-call chunk index -> the call's id. */
  #indexes = new Map<string, string>()

  constructor(readonly plan: ChunkPlan) {
    this.#announced = new Set(plan.announced)
    this.#answered = new Set(plan.answered)
  }

  #kind(name: string): 'read' | 'action' {
    return this.plan.actions.has(name) ? 'action' : 'read'
  }

  #event(event: AgentStreamEvent) {
    return this.plan.write({ t: 'event', event })
  }

  async read(chunk: unknown): Promise<void> {
    if (!Array.isArray(chunk) || chunk.length !== 2 || typeof chunk[0] !== 'string') return
    const [mode, payload] = chunk as [string, unknown]
    if (mode === 'messages') return this.#message(payload)
    if (mode === 'updates') return this.#updates(payload)
    if (mode === 'custom') return this.#custom(payload)
  }

  async #message(payload: unknown) {
    const message = Array.isArray(payload) ? payload[0] : undefined
    if (!AIMessage.isInstance(message) && !isChunkOfAi(message)) return
    const ai = message as AIMessage & { tool_call_chunks?: unknown }
    const text = ai.text
    if (text) await this.plan.write({ t: 'text', v: text })
    const chunks = Array.isArray(ai.tool_call_chunks) ? ai.tool_call_chunks : []
    for (const part of chunks) {
      if (!isObject(part)) continue
      const key = `${ai.id ?? ''}#${typeof part.index === 'number' ? part.index : 0}`
      const id = typeof part.id === 'string' && part.id ? part.id : this.#indexes.get(key)
      if (!id) continue
      this.#indexes.set(key, id)
      if (!this.#started.has(id) && !this.#announced.has(id) && typeof part.name === 'string') {
        this.#started.add(id)
        await this.#event({
          kind: 'tool-input-start',
          id,
          name: part.name,
          toolKind: this.#kind(part.name),
        })
      }
      if (this.#started.has(id) && typeof part.args === 'string' && part.args) {
        await this.#event({ kind: 'tool-input-delta', id, delta: part.args })
      }
    }
  }

  async #updates(payload: unknown) {
    if (!isObject(payload)) return
    for (const [node, update] of Object.entries(payload)) {
      if (node === '__interrupt__') {
        for (const open of Array.isArray(update) ? update : []) {
          if (isObject(open) && typeof open.id === 'string' && !this.interrupts.has(open.id)) {
            this.interrupts.set(open.id, { ...(open as OpenInterrupt), id: open.id })
          }
        }
        continue
      }
      for (const message of messagesOf(update)) {
        if (ToolMessage.isInstance(message)) await this.#toolResult(message)
        else if (AIMessage.isInstance(message)) await this.#toolCalls(message)
      }
    }
  }

  async #toolCalls(message: AIMessage) {
    for (const call of message.tool_calls ?? []) {
      if (!call.id || this.#announced.has(call.id)) continue
      this.#announced.add(call.id)
      this.calls.push({ id: call.id, name: call.name, args: call.args })
      await this.#event({
        kind: 'tool-input-available',
        id: call.id,
        name: call.name,
        input: json(call.args) ?? {},
        toolKind: this.#kind(call.name),
      })
    }
  }

  async #toolResult(message: ToolMessage) {
    const id = message.tool_call_id
    if (!id || this.#answered.has(id)) return
    this.#answered.add(id)
    await this.#event(
      message.status === 'error'
        ? { kind: 'tool-output-error', id, error: message.text || outputOf(message.content) }
        : { kind: 'tool-output', id, output: outputOf(message.content) }
    )
  }

  async #custom(payload: unknown) {
    if (this.plan.custom) {
      const frames = this.plan.custom(payload)
      const list = frames === null ? [] : Array.isArray(frames) ? frames : [frames]
      for (const one of list) await this.plan.write(one)
      return
    }
    const data = json(payload)
    if (data === undefined) return
    await this.plan.write({
      t: 'event',
      event: { kind: CUSTOM_EVENT, data } as unknown as AgentStreamEvent,
    })
  }
}

/** An AI message chunk (`AIMessageChunk` is an AI message for `isInstance`, checked anyway). */
const isChunkOfAi = (value: unknown) =>
  isObject(value) && typeof (value as { _getType?: unknown })._getType === 'function'
    ? (value as { _getType: () => string })._getType() === 'ai'
    : false

/** The messages a node's update holds: under any key, one or a list. */
function messagesOf(update: unknown): unknown[] {
  if (!isObject(update)) return []
  const out: unknown[] = []
  for (const value of Object.values(update)) {
    if (Array.isArray(value)) out.push(...value)
    else out.push(value)
  }
  return out
}

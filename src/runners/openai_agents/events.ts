import type {
  Agent,
  RunItem,
  RunStreamEvent,
  RunToolApprovalItem,
  ResponseStreamEvent,
} from '@openai/agents'
import type { StreamFrame, ToolConfirmation } from '../../core/frames.js'
import { argumentsOf, callIdOf } from './checkpoint.js'
import type { Scopes } from './scopes.js'

/** How a call that needs approval is asked (the `approval` frame's fields). */
export interface ApprovalOptions {
  /** Who may decide: `'requester'` (the default) or a role; per call when a function. */
  approver?: string | ((call: { toolName: string; input: unknown }) => string)
  /** The request lapses this long after it is asked, in milliseconds. Default: never. */
  expiresInMs?: number
  /** Display copy for the person deciding. Default: `{ title: 'Run <toolName>?' }`. */
  confirmation?: (call: { toolName: string; input: unknown }) => ToolConfirmation
}

/** A value as JSON (what a frame may hold): `undefined` as `null`, class instances as plain data. */
const json = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null))

/** The raw item's call id (function calls have `callId`; hosted and computer calls an `id`). */
function callId(raw: Record<string, unknown>): string {
  return String(raw.callId ?? raw.id ?? '')
}

/** The JSON Schema of a function tool's input, as the agent that asked declares it. */
function inputSchemaOf(item: RunToolApprovalItem): Record<string, unknown> | boolean {
  // Only a function call's arguments can be edited (the runner rewrites them in the state).
  if ((item.rawItem as { type?: string }).type !== 'function_call') return false
  const tool = (item.agent as Agent<any, any>).tools.find(
    (candidate) => candidate.type === 'function' && candidate.name === (item.toolName ?? item.name)
  ) as { parameters?: unknown } | undefined
  const schema = tool?.parameters
  return schema && typeof schema === 'object' ? (json(schema) as Record<string, unknown>) : false
}

/**
 * The OpenAI Agents SDK's run events written as frames (docs/runners/openai_agents.md, the
 * table): model text deltas as `text`, each model response a step (`step-start`,
 * `step-finish` with its usage), reasoning items as `reasoning`, tool calls as
 * `tool-input-available` and their results as `tool-output`, an interruption as an `approval`
 * (its id the SDK's tool-call id), a handoff as its call, then a sub-agent scope (`Scopes`, its
 * parent call the handoff's) that the handoff's result and the rest of the run are written
 * into. An event it does not know (a provider's raw `model` event, `agent_updated_stream_event`,
 * tool search and compaction items) is skipped: nothing of it is written.
 */
export class EventWriter {
  readonly #scopes: Scopes
  readonly #approval: ApprovalOptions
  /** Calls whose denial is stored already: the SDK's result for them is not written again. */
  readonly #denied: Set<string>
  /** Calls asked about in this segment, in order (the park waits for them). */
  readonly asked: string[] = []
  /** Calls and approvals held until the SDK has said which calls need approval. */
  #held: { calls: Map<string, StreamFrame & { t: 'event' }>; approvals: StreamFrame[] } = {
    calls: new Map(),
    approvals: [],
  }
  /** Text deltas of the current model response (a response streamed none: its message is written). */
  #deltas = 0

  constructor(scopes: Scopes, approval: ApprovalOptions, denied: Set<string>) {
    this.#scopes = scopes
    this.#approval = approval
    this.#denied = denied
  }

  #write(frame: StreamFrame) {
    return this.#scopes.current.writer.write(frame)
  }

  /** Write what was held: the calls (an approval's marked `action`), then their approvals. */
  async flush() {
    const { calls, approvals } = this.#held
    this.#held = { calls: new Map(), approvals: [] }
    for (const frame of calls.values()) await this.#write(frame)
    for (const frame of approvals) await this.#write(frame)
  }

  /** Write one run event. */
  async write(event: RunStreamEvent) {
    if (event.type === 'raw_model_stream_event') return this.#raw(event.data)
    if (event.type === 'run_item_stream_event') return this.#item(event.name, event.item)
    // `agent_updated_stream_event` (the handoff's own events open the scope) and anything new.
  }

  async #raw(data: ResponseStreamEvent) {
    switch (data.type) {
      case 'response_started':
        await this.flush()
        this.#deltas = 0
        await this.#write({ t: 'event', event: { kind: 'step-start' } })
        break
      case 'output_text_delta':
        if (data.delta) {
          this.#deltas += 1
          await this.#write({ t: 'text', v: data.delta })
        }
        break
      case 'response_done':
        await this.#write({
          t: 'event',
          event: {
            kind: 'step-finish',
            usage: json(data.response.usage) as Record<string, unknown>,
          },
        })
        break
      // A provider's own `model` events (reasoning deltas, hosted tool progress): skipped, the
      // run items that follow carry what they built.
    }
  }

  async #item(name: string, item: RunItem) {
    const raw = (item.rawItem ?? {}) as Record<string, unknown>
    if (name !== 'tool_called' && name !== 'tool_approval_requested') await this.flush()
    switch (name) {
      case 'message_output_created': {
        if (this.#deltas > 0) break
        // A response that streamed no text (a model that does not stream): its message whole.
        const content = Array.isArray(raw.content) ? raw.content : []
        const text = content
          .map((part: { type?: string; text?: string }) =>
            part.type === 'output_text' ? (part.text ?? '') : ''
          )
          .join('')
        if (text) await this.#write({ t: 'text', v: text })
        break
      }
      case 'reasoning_item_created': {
        const parts = [
          ...(Array.isArray(raw.content) ? raw.content : []),
          ...(Array.isArray(raw.rawContent) ? raw.rawContent : []),
        ] as { text?: unknown }[]
        const text = parts.map((part) => (typeof part.text === 'string' ? part.text : '')).join('')
        if (text) await this.#write({ t: 'event', event: { kind: 'reasoning', text } })
        break
      }
      case 'tool_called': {
        const id = callId(raw)
        this.#held.calls.set(id, {
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id,
            name: String(raw.name ?? raw.type ?? 'tool'),
            input: argumentsOf(raw),
            toolKind: 'read',
          },
        })
        break
      }
      case 'tool_approval_requested':
        await this.#ask(item as RunToolApprovalItem)
        break
      case 'tool_output': {
        const id = callId(raw)
        if (this.#denied.has(id)) break
        await this.#write({
          t: 'event',
          event: { kind: 'tool-output', id, output: json((item as { output?: unknown }).output) },
        })
        break
      }
      case 'handoff_requested':
        await this.#write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: callId(raw),
            name: String(raw.name ?? 'handoff'),
            input: argumentsOf(raw),
            toolKind: 'read',
          },
        })
        break
      case 'handoff_occurred': {
        // The sub-agent opens while its handoff call is still open (it is the scope's parent
        // call); the call's result follows, attributed to the call's own scope.
        const target = (item as { targetAgent?: { name?: string } }).targetAgent
        this.#scopes.handOff(target?.name ?? 'agent', callId(raw) || undefined)
        const output = raw.output as { text?: unknown } | string | undefined
        await this.#write({
          t: 'event',
          event: {
            kind: 'tool-output',
            id: callId(raw),
            output: typeof output === 'string' ? output : json(output?.text ?? output),
          },
        })
        break
      }
      // tool_search_called, tool_search_output_created, compaction_item_created, anything new:
      // skipped.
    }
  }

  /** One interruption: its `approval` frame (once per call id), the call marked `action`. */
  async #ask(item: RunToolApprovalItem) {
    const id = callIdOf(item)
    if (this.asked.includes(id)) return
    this.asked.push(id)
    const raw = item.rawItem as unknown as Record<string, unknown>
    const call = {
      toolName: String(item.toolName ?? item.name ?? raw.type),
      input: argumentsOf(raw),
    }
    const held = this.#held.calls.get(id)
    if (held && held.event.kind === 'tool-input-available') held.event.toolKind = 'action'
    const approver = this.#approval.approver
    this.#held.approvals.push({
      t: 'approval',
      runId: this.#scopes.current.runId,
      id,
      toolName: call.toolName,
      input: call.input ?? {},
      inputSchema: inputSchemaOf(item),
      confirmation: this.#approval.confirmation?.(call) ?? { title: `Run ${call.toolName}?` },
      approver: typeof approver === 'function' ? approver(call) : (approver ?? 'requester'),
      ...(this.#approval.expiresInMs
        ? { expiresAt: new Date(Date.now() + this.#approval.expiresInMs).toISOString() }
        : {}),
    })
  }

  /** The run's interruptions the stream did not announce (a nested agent tool's): asked too. */
  async askRest(interruptions: RunToolApprovalItem[]) {
    for (const item of interruptions) await this.#ask(item)
    await this.flush()
  }
}

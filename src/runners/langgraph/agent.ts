import { ToolMessage, type HumanMessage } from '@langchain/core/messages'
import type { RunnableConfig } from '@langchain/core/runnables'
import { Command, type StateSnapshot } from '@langchain/langgraph'
import type { AgentStreamErrorCode, StreamFrame } from '../../core/frames.js'
import { userMessageOf, type UserMessage } from '../../core/user_message.js'
import type { SettledItem } from '../../parking/types.js'
import type { AgentRunner, RunContext, RunOutcome } from '../../runner/contract.js'
import { CheckpointUnreadableError } from './checkpointer_errors.js'
import { ChunkReader, type CustomChunkMapper } from './chunks.js'
import { humanMessage } from './input.js'
import { SharedGraphState } from './shared_state.js'
import { isStateObject, type AgentState } from '../../core/agent_state.js'
import {
  askFor,
  type LangGraphApprovalOptions,
  type OpenInterrupt,
  type ParkedInterrupt,
} from './interrupts.js'
import { REJECTION_MESSAGES, refusedDecisions, resumeValues } from './resume_values.js'

/**
 * What the runner needs of a compiled LangGraph.js graph (`StateGraph(...).compile({
 * checkpointer })`, `createReactAgent`, LangChain's `createAgent`): `stream` and `getState`.
 */
export interface LangGraphGraph {
  stream(input: unknown, options?: Record<string, unknown>): Promise<AsyncIterable<unknown>>
  getState(config: RunnableConfig): Promise<StateSnapshot>
  /** The graph's nodes (a resume whose paused task names a node it no longer has is refused). */
  nodes?: Record<string, unknown>
}

/**
 * The checkpoint a parked segment stores: the LangGraph thread (the graph's state lives in the
 * graph's checkpointer), the checkpoint it paused at, and which interrupt each parked item
 * answers.
 */
export interface LangGraphCheckpoint {
  runner: 'langgraph'
  thread_id: string
  checkpoint_id?: string
  interrupts: Record<string, ParkedInterrupt>
}

/** Options of {@link langGraphAgent}. */
export interface LangGraphAgentOptions {
  /** The compiled graph, with a checkpointer (`interrupt()` needs one; resume reads it). */
  graph: LangGraphGraph
  /**
   * Merged into every `stream()` call (`recursionLimit`, `context`, `configurable`, `tags`...).
   * `configurable.thread_id` is the runner's (the package's thread id); `signal` and
   * `streamMode` too.
   */
  config?: Record<string, unknown> & { configurable?: Record<string, unknown> }
  /**
   * The graph's input for a new run, from the person's message (`null` when the run has none):
   * default `{ messages: [message] }` (the `MessagesAnnotation` state's key).
   */
  input?: (message: HumanMessage | null, ctx: RunContext) => unknown
  /** How approvals are asked (approver, expiry, display copy). */
  approval?: LangGraphApprovalOptions
  /** Tools whose calls are actions (`toolKind: 'action'`, as the console shows them); default none. */
  actions?: string[]
  /** What a custom chunk becomes (default: an `event` `langgraph-custom` with its JSON `data`). */
  custom?: CustomChunkMapper
  /**
   * The graph state keys shared with the page (AG-UI shared state): written as `state`
   * snapshots when they change (after each step), and the page's state of these keys
   * (`ctx.input.state`) merged into the graph's input, or the resume's `Command` `update`.
   * Default none: nothing shared.
   */
  stateKeys?: string[]
  /** Told about every error the graph throws (readers only get a fixed sentence). */
  onError?: (error: unknown) => void
}

const STREAM_MODES = ['messages', 'updates', 'custom']

/** `input` with the page's shared keys (a graph input that is an object; others as they are). */
const withPage = (input: unknown, page: AgentState | null) =>
  page && isStateObject(input) ? { ...input, ...page } : input

const unreadable = (): RunOutcome => ({ status: 'failed', code: 'checkpoint_unreadable' })

/** Whether `error` (or one of its causes) is the checkpointer's "cannot read this" error. */
function isUnreadable(error: unknown): boolean {
  for (let at = error, depth = 0; at && depth < 5; depth++) {
    if (at instanceof CheckpointUnreadableError) return true
    at = (at as { cause?: unknown }).cause
  }
  return false
}

/**
 * A stable code for an error the graph threw: a stored state `LucidSaver` cannot read is
 * `checkpoint_unreadable`, a provider's 402/429 a usage limit, anything else `run_failed`.
 */
function failureCode(error: unknown): AgentStreamErrorCode {
  if (isUnreadable(error)) return 'checkpoint_unreadable'
  const status = (error as { status?: unknown } | null)?.status
  const code = (error as { lc_error_code?: unknown } | null)?.lc_error_code
  if (status === 402 || status === 429 || code === 'MODEL_RATE_LIMIT') return 'quota_exceeded'
  return 'run_failed'
}

/** Whether `value` is a checkpoint this runner wrote. */
function isCheckpoint(value: unknown): value is LangGraphCheckpoint {
  const cp = value as LangGraphCheckpoint | null
  return (
    typeof cp === 'object' &&
    cp !== null &&
    cp.runner === 'langgraph' &&
    typeof cp.thread_id === 'string' &&
    typeof cp.interrupts === 'object' &&
    cp.interrupts !== null &&
    Object.values(cp.interrupts).every(
      (entry) => typeof entry === 'object' && entry !== null && typeof entry.interrupt === 'string'
    )
  )
}

/** The interrupts a state snapshot holds open, in task order. */
const openInterrupts = (state: StateSnapshot): (OpenInterrupt & { id: string })[] =>
  state.tasks.flatMap((task) =>
    task.interrupts.flatMap((open) =>
      typeof open.id === 'string' ? [{ ...(open as OpenInterrupt), id: open.id }] : []
    )
  )

/**
 * An {@link AgentRunner} for a compiled LangGraph.js graph (docs/runners/langgraph.md). One
 * LangGraph thread per package thread (`thread_id` = the run's thread id): the graph's
 * checkpointer holds the conversation, so a later turn sees the earlier ones through the graph's
 * state, as a LangGraph app's own threads do. `start` streams the graph on the person's message
 * (stream modes `messages`, `updates`, `custom`) and writes its frames; an `interrupt(value)`
 * parks the run: an `approval` per tool call it names (a {@link ToolCallInterrupt} or LangChain's
 * `humanInTheLoopMiddleware` request), else an `elicitation`. `resume` (any replica, after any
 * restart, with the checkpointer on a shared database) checks the paused interrupts are still
 * open in the thread's state (else `checkpoint_unreadable`) and streams
 * `new Command({ resume: { [interruptId]: value } })`.
 */
export function langGraphAgent(options: LangGraphAgentOptions): AgentRunner {
  const { graph, config = {}, approval = {}, onError } = options
  const actions = new Set(options.actions ?? [])
  // The page's state of the shared keys (`stateKeys`), or `null`.
  const pageState = (ctx: RunContext) =>
    options.stateKeys?.length ? new SharedGraphState(options.stateKeys).fromPage(ctx.input) : null

  const configFor = (threadId: string): RunnableConfig => ({
    ...config,
    configurable: { ...config.configurable, thread_id: threadId },
  })

  async function segment(
    ctx: RunContext,
    threadId: string,
    input: unknown,
    items: SettledItem[]
  ): Promise<RunOutcome> {
    const announced = new Set<string>()
    const answered = new Set<string>()
    for await (const frame of ctx.history()) {
      if (frame.t !== 'event') continue
      const event = frame.event as { kind: string; id?: string }
      if (event.kind === 'tool-input-available') announced.add(event.id!)
      if (/^tool-output(-error|-denied)?$/.test(event.kind)) answered.add(event.id!)
    }
    // A call a person did not approve has its denial stored already: no second result.
    for (const item of items) if (item.status !== 'approved') answered.add(item.id)
    const reader = new ChunkReader({
      write: async (frame: StreamFrame) => {
        await ctx.writer.write(frame)
      },
      actions,
      answered,
      announced,
      custom: options.custom,
    })
    const shared = options.stateKeys?.length ? new SharedGraphState(options.stateKeys) : null
    const abort = new AbortController()
    const stop = () => abort.abort()
    if (ctx.signal.aborted) stop()
    ctx.signal.addEventListener('abort', stop, { once: true })
    try {
      const stream = await graph.stream(input, {
        ...configFor(threadId),
        streamMode: shared ? [...STREAM_MODES, 'values'] : STREAM_MODES,
        signal: abort.signal,
      })
      for await (const chunk of stream) {
        if (shared && Array.isArray(chunk) && chunk[0] === 'values') {
          for (const frame of shared.frames(chunk[1])) await ctx.writer.write(frame)
        } else await reader.read(chunk)
      }
    } catch (error) {
      if (abort.signal.aborted) return { status: 'cancelled' }
      onError?.(error)
      return { status: 'failed', code: failureCode(error) }
    } finally {
      ctx.signal.removeEventListener('abort', stop)
    }
    if (abort.signal.aborted) return { status: 'cancelled' }
    let state: StateSnapshot | null = null
    try {
      state = await graph.getState(configFor(threadId))
    } catch (error) {
      onError?.(error)
    }
    const open = state ? openInterrupts(state) : [...reader.interrupts.values()]
    if (open.length === 0) return { status: 'finished' }
    // LangChain's HITL request names calls by tool and args: the model's calls, oldest unasked
    // first (this segment's, else the last AI message of the thread's state).
    const calls = reader.calls.length > 0 ? [...reader.calls] : lastCalls(state)
    const callIdOf = (name: string) => {
      const at = calls.findIndex((call) => call.name === name && !answered.has(call.id))
      return at === -1 ? undefined : calls.splice(at, 1)[0].id
    }
    const interrupts: Record<string, ParkedInterrupt> = {}
    for (const one of open) {
      for (const ask of askFor(one, ctx.runId, approval, callIdOf)) {
        if (Object.hasOwn(interrupts, ask.id)) continue
        await ctx.writer.write(ask.frame)
        interrupts[ask.id] = ask.parked
      }
    }
    const checkpointId = state?.config.configurable?.checkpoint_id
    return {
      status: 'parked',
      checkpoint: {
        runner: 'langgraph',
        thread_id: threadId,
        ...(typeof checkpointId === 'string' ? { checkpoint_id: checkpointId } : {}),
        interrupts,
      } satisfies LangGraphCheckpoint,
    }
  }

  return {
    async start(ctx) {
      let said: UserMessage | null = null
      for await (const frame of ctx.history()) said ??= userMessageOf(frame)
      const message = humanMessage(said, ctx.input, ctx.runId)
      const page = pageState(ctx)
      if (options.input) {
        return segment(ctx, ctx.threadId, withPage(options.input(message, ctx), page), [])
      }
      // Every call of the state's last AI message without a result gets one before the new
      // message, so the model is never sent a call without its result: a park that was cancelled
      // (its paused task is dropped by the new input), a run stopped, killed or failed while its
      // tools ran (the state has the calls, `next: ['tools']`, no interrupt).
      let state: StateSnapshot | null = null
      try {
        state = await graph.getState(configFor(ctx.threadId))
      } catch (error) {
        onError?.(error)
        if (isUnreadable(error)) return unreadable()
      }
      const why = state && openInterrupts(state).length > 0 ? 'cancelled' : 'stopped'
      const results = state
        ? unansweredCalls(state).map(
            (call) =>
              new ToolMessage({
                tool_call_id: call.id,
                name: call.name,
                content: REJECTION_MESSAGES[why],
                status: 'error',
              })
          )
        : []
      const messages = [...results, ...(message ? [message] : [])]
      return segment(ctx, ctx.threadId, withPage({ messages }, page), [])
    },
    async resume(ctx) {
      const checkpoint = ctx.checkpoint
      if (!isCheckpoint(checkpoint)) return unreadable()
      let state: StateSnapshot
      try {
        state = await graph.getState(configFor(checkpoint.thread_id))
      } catch (error) {
        onError?.(error)
        return unreadable()
      }
      // The paused interrupts must still be open, in tasks of nodes the graph still has.
      const nodes = graph.nodes ? new Set(Object.keys(graph.nodes)) : null
      const open = new Set(
        state.tasks
          .filter((task) => !nodes || nodes.has(task.name))
          .flatMap((task) => task.interrupts.map((one) => one.id))
      )
      const wanted = Object.values(checkpoint.interrupts).map((entry) => entry.interrupt)
      if (wanted.length === 0 || wanted.some((id) => !open.has(id))) return unreadable()
      // A decision the request does not allow (a rejection of a HITL review without 'reject'):
      // LangChain's middleware would throw on it, so the graph is not resumed and nothing runs
      // (the approved calls too, as when the middleware drops a rejected request's other calls).
      if (refusedDecisions(checkpoint.interrupts, ctx.items).length > 0) {
        for (const item of ctx.items) {
          if (item.status !== 'approved') continue
          await ctx.writer.write({
            t: 'event',
            event: { kind: 'tool-output-denied', id: item.id, status: 'cancelled' },
          })
        }
        return { status: 'finished' }
      }
      const resume = resumeValues(checkpoint.interrupts, ctx.items)
      const page = pageState(ctx)
      const command = new Command({ resume, ...(page ? { update: page } : {}) })
      return segment(ctx, checkpoint.thread_id, command, ctx.items)
    },
  }
}

/** The calls of the last AI message in a state's `messages` that no tool message answers. */
function unansweredCalls(state: StateSnapshot): { id: string; name: string }[] {
  const messages = (state.values as { messages?: unknown } | undefined)?.messages
  if (!Array.isArray(messages)) return []
  const answered = new Set(
    messages.filter((m) => ToolMessage.isInstance(m)).map((m) => (m as ToolMessage).tool_call_id)
  )
  return lastCalls(state).filter((call) => !answered.has(call.id))
}

/** The tool calls of the last AI message in a state's `messages`, if any. */
function lastCalls(state: StateSnapshot | null): { id: string; name: string }[] {
  const messages = (state?.values as { messages?: unknown } | undefined)?.messages
  if (!Array.isArray(messages)) return []
  for (let i = messages.length - 1; i >= 0; i--) {
    const calls = (messages[i] as { tool_calls?: { id?: string; name: string }[] }).tool_calls
    if (Array.isArray(calls) && calls.length > 0) {
      return calls.filter((c) => typeof c.id === 'string').map((c) => ({ id: c.id!, name: c.name }))
    }
  }
  return []
}

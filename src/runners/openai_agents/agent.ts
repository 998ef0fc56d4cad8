import {
  run,
  type Agent,
  type AgentInputItem,
  type RunState,
  type Runner,
  type StreamedRunResult,
  type StreamRunOptions,
} from '@openai/agents'
import type { AgentStreamErrorCode, StreamFrame } from '../../core/frames.js'
import type { AgentRunner, ResumeContext, RunContext, RunOutcome } from '../../runner/contract.js'
import { checkpointOf, restoredState, type OpenAiAgentsCheckpoint } from './checkpoint.js'
import { EventWriter, type ApprovalOptions } from './events.js'
import { runInput } from './input.js'
import { Scopes } from './scopes.js'
import { unreadableOutcome } from '../shared/checkpoint_unreadable.js'

/** `run()`'s streaming options, less what the runner supplies (`stream`, `signal`). */
export type OpenAiRunOptions<TContext = any> = Omit<
  StreamRunOptions<TContext, Agent<any, any>>,
  'stream' | 'signal'
>

/** Options of {@link openAiAgent}. */
export interface OpenAiAgentOptions<TContext = any> {
  /** The entry agent (its tools, handoffs and `asTool()` agents come with it). */
  agent: Agent<TContext, any>
  /** `run()`'s options for every segment (`context`, `maxTurns`, ...). */
  runOptions?: OpenAiRunOptions<TContext>
  /** A `Runner` of your own (its config: model provider, tracing, ...); default the SDK's `run`. */
  runner?: Runner
  /** How calls that need approval are asked (approver, expiry, display copy). */
  approval?: ApprovalOptions
  /** Told about every error the SDK reports (readers only get a fixed sentence). */
  onError?: (error: unknown) => void
}

/** The stable failure code of an error the SDK threw: a quota or rate limit, else `run_failed`. */
function failureCode(error: unknown): AgentStreamErrorCode {
  const status = (error as { status?: unknown } | null)?.status
  return status === 429 || status === 402 ? 'quota_exceeded' : 'run_failed'
}

/**
 * An {@link AgentRunner} for an `Agent` of the OpenAI Agents SDK (`@openai/agents`): it runs the
 * agent streamed (`run(agent, input, { stream: true, signal })`) on the thread's conversation
 * (the earlier turns, `ctx.conversation()`, then this run's person's message) and writes its run
 * events as frames (docs/runners/openai_agents.md). A tool with `needsApproval` interrupts the
 * run: one `approval` frame per interruption, and the run parks with the SDK's own serialized
 * `RunState` as its checkpoint. `resume` (any replica, after any restart) rebuilds the state
 * with `RunState.fromString(agent, ...)`, approves or rejects each interruption as it was
 * decided (an approved call with a person's edited input runs with it) and runs on from it: the
 * model is not called again for what it said, and an approved tool runs once. A checkpoint the
 * SDK cannot read any more (the agent changed) fails the run with `checkpoint_unreadable`.
 * A stop aborts the SDK run through its signal. No `continue`: see the doc's "What it cannot do".
 */
export function openAiAgent<TContext = any>(options: OpenAiAgentOptions<TContext>): AgentRunner {
  const { agent, runOptions = {}, runner, approval = {}, onError } = options

  const stream = (
    input: AgentInputItem[] | RunState<any, Agent<any, any>>,
    signal: AbortSignal
  ): Promise<StreamedRunResult<any, Agent<any, any>>> => {
    const settings = { ...runOptions, stream: true, signal } as StreamRunOptions<
      any,
      Agent<any, any>
    >
    const entry = agent as Agent<any, any>
    return runner ? runner.run(entry, input, settings) : run(entry, input, settings)
  }

  async function segment(
    ctx: RunContext,
    scopes: Scopes,
    input: AgentInputItem[] | RunState<any, Agent<any, any>>,
    denied: Set<string>
  ): Promise<RunOutcome> {
    const events = new EventWriter(scopes, approval, denied)
    const abort = new AbortController()
    const stop = () => abort.abort()
    if (ctx.signal.aborted) stop()
    ctx.signal.addEventListener('abort', stop, { once: true })
    let failed: AgentStreamErrorCode | null = null
    let result: Awaited<ReturnType<typeof stream>> | undefined
    try {
      result = await stream(input, abort.signal)
      for await (const event of result) await events.write(event)
      await result.completed
      if (result.error) throw result.error
      await events.askRest(result.interruptions ?? [])
    } catch (error) {
      if (!ctx.signal.aborted) {
        onError?.(error)
        failed = failureCode(error)
      }
    } finally {
      ctx.signal.removeEventListener('abort', stop)
    }
    if (ctx.signal.aborted) return { status: 'cancelled' }
    if (failed || !result) {
      await scopes.close('failed').catch((error) => onError?.(error))
      return { status: 'failed', code: failed ?? 'run_failed' }
    }
    if (events.asked.length > 0) {
      const checkpoint: OpenAiAgentsCheckpoint = {
        runner: 'openai-agents',
        state: result.state.toString(),
        scopes: scopes.open,
        handoffs: scopes.handoffs,
      }
      return { status: 'parked', checkpoint }
    }
    await scopes.close('success')
    return { status: 'finished' }
  }

  async function start(ctx: RunContext): Promise<RunOutcome> {
    const earlier: StreamFrame[] = []
    for await (const frame of ctx.conversation()) earlier.push(frame)
    const own: StreamFrame[] = []
    for await (const frame of ctx.history()) own.push(frame)
    return segment(ctx, new Scopes(ctx), runInput(earlier, own, ctx.input), new Set())
  }

  async function resume(ctx: ResumeContext): Promise<RunOutcome> {
    let restored: Awaited<ReturnType<typeof restoredState>>
    let checkpoint: OpenAiAgentsCheckpoint
    try {
      checkpoint = checkpointOf(ctx.checkpoint)
      restored = await restoredState(agent, checkpoint, ctx.items)
    } catch (error) {
      return unreadableOutcome(error, onError)
    }
    const scopes = new Scopes(ctx, checkpoint.scopes, checkpoint.handoffs)
    return segment(ctx, scopes, restored.state, restored.denied)
  }

  return { start, resume }
}

import type { Agent } from '@mastra/core/agent'
import type { StreamFrame } from '../../core/frames.js'
import { canonicalJson } from '../../core/canonical_json.js'
import { userMessageOf } from '../../core/user_message.js'
import type { SettledItem } from '../../parking/types.js'
import type {
  AgentRunner,
  ContinueContext,
  ResumeContext,
  RunContext,
  RunOutcome,
} from '../../runner/contract.js'
import { writeChunks, type ApprovalOptions, type ChunksOutcome } from './chunks.js'
import { inputMessages, turnMessages } from './history.js'

/** The checkpoint a parked segment keeps: the Mastra run and the calls it waits for. */
export interface MastraCheckpoint {
  runner: 'mastra'
  /** Mastra's own run id (its snapshot's key in Mastra's storage). */
  runId: string
  /** The tool calls waiting for a person, in the order they were asked. */
  waiting: string[]
}

/** Options of {@link mastraAgent}. */
export interface MastraAgentOptions {
  /**
   * A Mastra `Agent` registered with a `Mastra` whose storage is durable and shared by every
   * replica (`lucidMastraStore({ db })`): its snapshots are what a paused run resumes from.
   */
  agent: Agent<any, any, any>
  /**
   * Options of every `agent.stream()`, `approveToolCall()` and `declineToolCall()` call
   * (`requireToolApproval`, `maxSteps`, `memory`, `requestContext`, ...), per run when a
   * function. The runner sets `abortSignal` (and the `runId` of a resume).
   */
  streamOptions?: Record<string, unknown> | ((ctx: RunContext) => Record<string, unknown>)
  /** How calls that need approval are asked (approver, expiry, display copy). */
  approval?: ApprovalOptions
  /** Told about every error Mastra reports or throws (readers only get a fixed sentence). */
  onError?: (error: unknown) => void
}

/** The sentence a call that was approved with an edited input is declined with. */
export const EDITED_INPUT_REASON =
  'The call was approved with an edited input, which this agent cannot run; it did not run.'

/** What the model is told about a call that did not run, per status (or the person's reason). */
const DENIALS: Record<string, string> = {
  rejected: 'A person rejected this tool call; it did not run.',
  expired: 'Nobody approved this tool call in time; it did not run.',
  cancelled: 'The run was cancelled before this tool call ran.',
}

function readCheckpoint(value: unknown): MastraCheckpoint | null {
  if (!value || typeof value !== 'object') return null
  const { runner, runId, waiting } = value as Partial<MastraCheckpoint>
  if (runner !== 'mastra' || typeof runId !== 'string' || !runId) return null
  if (!Array.isArray(waiting) || !waiting.every((id) => typeof id === 'string')) return null
  return { runner, runId, waiting }
}

async function framesOf(source: AsyncIterable<StreamFrame>): Promise<StreamFrame[]> {
  const out: StreamFrame[] = []
  for await (const frame of source) out.push(frame)
  return out
}

/** A run's signal, linked to a controller of its own (what Mastra is given). */
function linkedAbort(signal: AbortSignal) {
  const abort = new AbortController()
  const stop = () => abort.abort()
  if (signal.aborted) stop()
  signal.addEventListener('abort', stop, { once: true })
  return { signal: abort.signal, release: () => signal.removeEventListener('abort', stop) }
}

/**
 * An {@link AgentRunner} for a Mastra `Agent` (`@mastra/core`, docs/runners/mastra.md): `start`
 * runs `agent.stream()` on the thread's conversation (`ctx.conversation()`: each earlier turn's
 * person message and the agent's answer, then this run's person message) and writes its chunks
 * as frames. A tool with `requireApproval` (or every tool, with `requireToolApproval`) parks the
 * run on one `approval` frame per `tool-call-approval` chunk; the checkpoint is Mastra's run id.
 * `resume` (any replica, after any restart) hands each decision to Mastra's own
 * `approveToolCall` / `declineToolCall`, which continue from the snapshot Mastra stored; an
 * approved call runs once. A checkpoint or snapshot that no longer resumes fails the run with
 * `checkpoint_unreadable`.
 */
export function mastraAgent(options: MastraAgentOptions): AgentRunner {
  const { agent, approval = {}, onError } = options
  const extra = (ctx: RunContext) =>
    typeof options.streamOptions === 'function'
      ? options.streamOptions(ctx)
      : (options.streamOptions ?? {})

  /** Which tools ask a person first: every one with `requireToolApproval`, else `requireApproval`. */
  async function toolKinds(ctx: RunContext) {
    const all = Boolean(extra(ctx).requireToolApproval)
    let tools: Record<string, { requireApproval?: unknown }> = {}
    try {
      tools = (await agent.listTools()) as typeof tools
    } catch (error) {
      onError?.(error)
    }
    return (name: string): 'read' | 'action' =>
      all || (Object.hasOwn(tools, name) && tools[name]?.requireApproval) ? 'action' : 'read'
  }

  function outcomeOf(runId: string, result: ChunksOutcome, waiting: string[]): RunOutcome {
    if (result.failed) return { status: 'failed', code: result.failed }
    if (result.aborted) return { status: 'cancelled' }
    if (waiting.length > 0) {
      return {
        status: 'parked',
        checkpoint: { runner: 'mastra', runId, waiting } satisfies MastraCheckpoint,
      }
    }
    return { status: 'finished' }
  }

  async function start(ctx: RunContext): Promise<RunOutcome> {
    const earlier = await framesOf(ctx.conversation())
    const own = await framesOf(ctx.history())
    const said = own.some((frame) => userMessageOf(frame) !== null)
    const messages = [
      ...turnMessages(earlier),
      ...inputMessages(ctx.input, said),
      ...turnMessages(own),
    ]
    const abort = linkedAbort(ctx.signal)
    try {
      const output = await agent.stream(
        messages as never,
        {
          ...extra(ctx),
          abortSignal: abort.signal,
        } as never
      )
      const result = await writeChunks(
        { ...ctx, signal: abort.signal },
        output.fullStream as never,
        {
          approval,
          toolKind: await toolKinds(ctx),
          known: new Set(),
          onError,
        }
      )
      return outcomeOf(output.runId, result, result.asked)
    } finally {
      abort.release()
    }
  }

  /** What Mastra is told for one settled call: approve it, or decline it with the words. */
  function decisionOf(item: SettledItem, asked: Map<string, unknown>) {
    if (item.status !== 'approved') {
      return { approved: false, reason: item.reason || DENIALS[item.status] || DENIALS.rejected }
    }
    // Mastra runs the call with the input it stored: an edit cannot be applied, so it is not run
    // (its approval frame refuses edits, `inputSchema: false`; one made before that is declined).
    const edited =
      item.input !== undefined &&
      canonicalJson(item.input) !== canonicalJson(asked.get(item.id) ?? {})
    return edited ? { approved: false, reason: EDITED_INPUT_REASON } : { approved: true }
  }

  async function resume(ctx: ResumeContext): Promise<RunOutcome> {
    const checkpoint = readCheckpoint(ctx.checkpoint)
    if (!checkpoint) return { status: 'failed', code: 'checkpoint_unreadable' }
    const asked = new Map<string, unknown>()
    for (const frame of await framesOf(ctx.history())) {
      if (frame.t === 'approval' && frame.runId === ctx.runId) asked.set(frame.id, frame.input)
    }
    const byId = new Map(ctx.items.filter((i) => i.kind === 'approval').map((i) => [i.id, i]))
    const order = [
      ...checkpoint.waiting.filter((id) => byId.has(id)),
      ...[...byId.keys()].filter((id) => !checkpoint.waiting.includes(id)),
    ]
    const known = new Set([...checkpoint.waiting, ...byId.keys()])
    const toolKind = await toolKinds(ctx)
    const waiting: string[] = []
    const abort = linkedAbort(ctx.signal)
    try {
      for (const id of order) {
        const decision = decisionOf(byId.get(id)!, asked)
        const call = { ...extra(ctx), runId: checkpoint.runId, toolCallId: id }
        let output: { fullStream: unknown }
        try {
          output = decision.approved
            ? await agent.approveToolCall({ ...call, abortSignal: abort.signal } as never)
            : await agent.declineToolCall({
                ...call,
                reason: decision.reason,
                abortSignal: abort.signal,
              } as never)
        } catch (error) {
          // No suspended run under that id (resumed already, or the agent changed): Mastra
          // cannot go on from it, and asking again would not change that.
          onError?.(error)
          if (ctx.signal.aborted) return { status: 'cancelled' }
          return { status: 'failed', code: 'checkpoint_unreadable' }
        }
        const result = await writeChunks(
          { ...ctx, signal: abort.signal },
          output.fullStream as never,
          { approval, toolKind, known, onError }
        )
        waiting.push(...result.asked)
        if (result.failed || result.aborted) return outcomeOf(checkpoint.runId, result, [])
      }
      return outcomeOf(checkpoint.runId, { asked: [], failed: null, aborted: false }, waiting)
    } finally {
      abort.release()
    }
  }

  /**
   * A segment whose writer died: a resume is handed to Mastra again (its snapshot says whether
   * the call is still waiting: a resume Mastra had claimed is not run twice, the run then fails
   * with `checkpoint_unreadable`); a first segment cannot be continued without running the model
   * and its tools again, so it fails.
   */
  async function carryOn(ctx: ContinueContext): Promise<RunOutcome> {
    if (!ctx.resumed) return { status: 'failed', code: 'run_failed' }
    return resume(ctx)
  }

  return { start, resume, continue: carryOn }
}

import { stepCountIs, streamText, type Agent, type ModelMessage, type ToolSet } from 'ai'
import type { StreamFrame } from '../../core/frames.js'
import type { AgentRunner, ContinueContext, RunContext, RunOutcome } from '../../runner/contract.js'
import { callsAtTakeover, executionStartFrame } from './continuation.js'
import type { SettledItem } from '../../parking/types.js'
import { completedCalls, framesToMessages, resumeMessages } from './history.js'
import { userMessageOf } from '../../core/user_message.js'
import { inputMessages, withContext } from './input.js'
import { isAskTool } from './ask_tool.js'
import { writeParts, type AiSdkCheckpoint, type ApprovalOptions } from './parts.js'
import { invalidApprovedInputs } from './tool_input.js'
import { editedSignedApprovals } from './signed_approval.js'
import { staticToolKind, type ToolApprovalSetting } from './tool_approval.js'
import { sharedStateOf, type SharedState } from './shared_state.js'
import { ToolSpans } from '../../telemetry/traces/index.js'

/** `streamText`'s options, less what the runner supplies (the conversation and the signal). */
export type StreamTextSettings<TOOLS extends ToolSet> = Omit<
  Parameters<typeof streamText<TOOLS>>[0],
  'prompt' | 'messages' | 'abortSignal'
>

/** What {@link aiSdkAgent} takes besides the model's settings. */
export interface AiSdkRunnerOptions {
  /** How calls that need approval are asked (approver, expiry, display copy). */
  approval?: ApprovalOptions
  /** Told about every error the AI SDK reports (readers only get a fixed sentence). */
  onError?: (error: unknown) => void
  /**
   * The tools' context (`streamText`'s `toolsContext`, by tool name) made per segment from the
   * run's shared state: the page's state and a writer of the agent's (docs/ai-sdk.md, "Shared
   * state"). A tool reads it as `execute(input, { context })`. Takes the place of
   * `toolsContext`; not for `{ agent }` (an `Agent` keeps its own settings).
   */
  toolsContextOf?: (state: SharedState) => Record<string, unknown>
}

/**
 * Options of {@link aiSdkAgent}: `streamText`'s settings (`model`, `tools`, `system` or
 * `instructions`, `stopWhen` (default `stepCountIs(20)`, as `ToolLoopAgent`), ...), or
 * `{ agent }`, an AI SDK `Agent` such as `ToolLoopAgent`; plus {@link AiSdkRunnerOptions}.
 */
export type AiSdkAgentOptions<TOOLS extends ToolSet> = AiSdkRunnerOptions &
  (StreamTextSettings<TOOLS> | { agent: Agent<never, TOOLS> })

/**
 * An {@link AgentRunner} for an agent written with the AI SDK 7: it runs `streamText` (or the
 * agent's `stream`) on the thread's conversation, as the AI SDK's own route hands
 * `convertToModelMessages(messages)` to `streamText`: the earlier turns
 * (`ctx.conversation()`: each person's message with its files, the assistant's text, tool calls
 * and results), then the run's input and this run's frames (its person's message first, the
 * client's AG-UI `context` as data at its start, never as a system message) and writes its full stream into the run's stream
 * (docs/ai-sdk.md). A call the SDK asks a person to approve (the call-level `toolApproval`
 * option, or a tool's deprecated `needsApproval`) parks the run on an `approval` frame (a
 * signed request, `experimental_toolApprovalSecret`, keeps its signature in the stream); a
 * tool made by `askTool()` parks it on an `elicitation`. `resume` (any replica, after any
 * restart) rebuilds the conversation from the stored frames (`ctx.history()`) and the run's
 * input, adds the decisions (approved calls with their approved input; denials as the SDK gives
 * them to the model) and lets the SDK go on: the model is not called again for what it already
 * said, and an approved tool runs once, on the replica that resumes.
 */
export function aiSdkAgent<TOOLS extends ToolSet>(options: AiSdkAgentOptions<TOOLS>): AgentRunner {
  const { approval = {}, onError, toolsContextOf, ...rest } = options
  const tools: ToolSet =
    'agent' in rest ? rest.agent.tools : ((rest as { tools?: ToolSet }).tools ?? {})

  // What decides approvals, when the runner can read it (an `Agent` keeps its settings).
  const toolApproval =
    'agent' in rest
      ? undefined
      : ((rest as { toolApproval?: unknown }).toolApproval as ToolApprovalSetting | undefined)

  const askTool = Object.keys(tools).find((name) => isAskTool(tools[name]))

  type ExecutionStart = (event: {
    toolCall: { toolCallId: string; toolName: string; input: unknown }
  }) => Promise<void>
  type ExecutionEnd = (event: {
    toolCall: { toolCallId: string }
    toolOutput?: { type?: string }
  }) => Promise<void>
  const stream = async (
    messages: ModelMessage[],
    signal: AbortSignal,
    onToolExecutionStart: ExecutionStart,
    spans: ToolSpans,
    ctx: RunContext
  ) => {
    // Each execution is an `execute_tool` span, a child of the segment's (docs/observability.md).
    const onToolExecutionEnd: ExecutionEnd = async ({ toolCall, toolOutput }) => {
      spans.end(toolCall.toolCallId, toolOutput?.type === 'tool-error')
      await ownEnd?.({ toolCall, toolOutput })
    }
    const ownEnd = (rest as { onToolExecutionEnd?: ExecutionEnd }).onToolExecutionEnd
    if ('agent' in rest) {
      return rest.agent.stream({
        messages,
        abortSignal: signal,
        onToolExecutionStart,
        onToolExecutionEnd,
      } as never)
    }
    const own = (rest as { onToolExecutionStart?: (event: unknown) => unknown })
      .onToolExecutionStart
    return streamText({
      stopWhen: stepCountIs(20),
      ...(rest as StreamTextSettings<TOOLS>),
      messages,
      abortSignal: signal,
      onError: ({ error }: { error: unknown }) => onError?.(error),
      onToolExecutionStart: async (event: Parameters<ExecutionStart>[0]) => {
        await onToolExecutionStart(event)
        await own?.(event)
      },
      onToolExecutionEnd,
      ...(toolsContextOf ? { toolsContext: toolsContextOf(sharedStateOf(ctx)) } : {}),
    } as Parameters<typeof streamText<TOOLS>>[0])
  }

  /**
   * Before a tool's `execute` runs, its start is committed (`tool-execution-start`): a replica
   * that continues the segment after this one died never runs it again. When that cannot be
   * written (the stream was taken over, the database is gone), the run is aborted: the tool is
   * given an aborted signal.
   */
  const executionStart =
    (ctx: RunContext, abort: AbortController, spans: ToolSpans): ExecutionStart =>
    async ({ toolCall }) => {
      spans.start(toolCall.toolName, toolCall.toolCallId)
      try {
        await ctx.writer.write(
          executionStartFrame(toolCall.toolCallId, toolCall.toolName, toolCall.input)
        )
        await ctx.writer.flush?.()
      } catch (error) {
        abort.abort()
        throw error
      }
    }

  async function segment(
    ctx: RunContext,
    items: SettledItem[],
    /** Items whose settlement is stored already (default `items`). */
    settledIds?: SettledItem[]
  ): Promise<RunOutcome> {
    const earlier: StreamFrame[] = []
    for await (const frame of ctx.conversation()) earlier.push(frame)
    const stored: StreamFrame[] = []
    for await (const frame of ctx.history()) stored.push(frame)
    // An approved call whose input breaks its tool's schema does not run: its error is its
    // result (written, and given to the model), and the SDK is not asked to run it.
    // So does an approved call of a signed request whose input a person edited: the SDK's
    // signature binds the input it was asked for.
    const invalid = await invalidApprovedInputs(stored, items, tools)
    for (const edited of editedSignedApprovals(stored, items)) {
      if (!invalid.some((call) => call.id === edited.id)) invalid.push(edited)
    }
    for (const { frame } of invalid) {
      await ctx.writer.write(frame)
      stored.push(frame)
    }
    const refused = new Set(invalid.map((call) => call.id))
    const runnable = items.filter((item) => !refused.has(item.id))
    // What the person said is this run's first frame when a door started it: the input's
    // `message` (its text) is then not said twice.
    const said = stored.some((frame) => userMessageOf(frame) !== null)
    const input =
      said && ctx.input && typeof ctx.input === 'object'
        ? { ...(ctx.input as object), message: undefined }
        : ctx.input
    // The client's context rides in the person's message of this run (never a system message).
    const messages = [
      ...completedCalls(framesToMessages(earlier, { askTool })),
      ...withContext(
        [
          ...(await inputMessages(input)),
          ...resumeMessages(framesToMessages(stored, { askTool }), runnable),
        ],
        input
      ),
    ]
    const abort = new AbortController()
    const stop = () => abort.abort()
    if (ctx.signal.aborted) stop()
    ctx.signal.addEventListener('abort', stop, { once: true })
    const spans = new ToolSpans()
    try {
      const start = executionStart(ctx, abort, spans)
      const result = await stream(messages, abort.signal, start, spans, ctx)
      return await writeParts({ ...ctx, signal: abort.signal }, result.fullStream as never, {
        tools,
        toolApproval,
        approval,
        settled: new Set((settledIds ?? items).map((item) => item.id)),
      })
    } finally {
      spans.endAll()
      ctx.signal.removeEventListener('abort', stop)
    }
  }

  /**
   * A segment whose writer died, continued here from what is stored: each call left without a
   * result gets one (started: interrupted, never run again; emitted but not started: not run),
   * a segment that had asked a person parks on it, and otherwise the conversation is rebuilt as
   * for a resume, with the segment's approved calls that did not run yet (they run now, once).
   */
  async function carryOn(ctx: ContinueContext): Promise<RunOutcome> {
    const stored: StreamFrame[] = []
    for await (const frame of ctx.history()) stored.push(frame)
    const settled = new Set(ctx.items.map((item) => item.id))
    const calls = callsAtTakeover(stored, tools, settled)
    for (const { id, error, call } of calls.interrupted) {
      if (call) {
        await ctx.writer.write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id,
            name: call.name,
            input: call.input ?? {},
            toolKind: staticToolKind(call.name, tools, toolApproval),
          },
        })
      }
      await ctx.writer.write({ t: 'event', event: { kind: 'tool-output-error', id, error } })
    }
    if (calls.waiting.length > 0) {
      return {
        status: 'parked',
        checkpoint: { runner: 'ai-sdk', waiting: calls.waiting } satisfies AiSdkCheckpoint,
      }
    }
    const pending = ctx.items.filter((item) => !calls.answered.has(item.id))
    return segment(ctx, pending, ctx.items)
  }

  return {
    start: (ctx) => segment(ctx, []),
    resume: (ctx) => segment(ctx, ctx.items),
    continue: (ctx) => carryOn(ctx),
  }
}

import { stepCountIs, streamText, type Agent, type ModelMessage, type ToolSet } from 'ai'
import type { StreamFrame } from '../core/frames.js'
import type { AgentRunner, RunContext, RunOutcome } from '../runner/contract.js'
import type { SettledItem } from '../parking/types.js'
import { completedCalls, framesToMessages, resumeMessages } from './history.js'
import { userMessageOf } from '../core/user_message.js'
import { inputMessages } from './input.js'
import { isAskTool } from './ask_tool.js'
import { writeParts, type ApprovalOptions } from './parts.js'
import { invalidApprovedInputs } from './tool_input.js'

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
 * and results), then the run's input (AG-UI `context`) and this run's frames (its person's
 * message first) and writes its full stream into the run's stream
 * (docs/ai-sdk.md). A tool with `needsApproval` parks the run on an `approval` frame; a
 * tool made by `askTool()` parks it on an `elicitation`. `resume` (any replica, after any
 * restart) rebuilds the conversation from the stored frames (`ctx.history()`) and the run's
 * input, adds the decisions (approved calls with their approved input; denials as the SDK gives
 * them to the model) and lets the SDK go on: the model is not called again for what it already
 * said, and an approved tool runs once, on the replica that resumes.
 */
export function aiSdkAgent<TOOLS extends ToolSet>(options: AiSdkAgentOptions<TOOLS>): AgentRunner {
  const { approval = {}, onError, ...rest } = options
  const tools: ToolSet =
    'agent' in rest ? rest.agent.tools : ((rest as { tools?: ToolSet }).tools ?? {})

  const askTool = Object.keys(tools).find((name) => isAskTool(tools[name]))

  const stream = async (messages: ModelMessage[], signal: AbortSignal) => {
    if ('agent' in rest) {
      return rest.agent.stream({ messages, abortSignal: signal } as never)
    }
    return streamText({
      stopWhen: stepCountIs(20),
      ...(rest as StreamTextSettings<TOOLS>),
      messages,
      abortSignal: signal,
      onError: ({ error }: { error: unknown }) => onError?.(error),
    } as Parameters<typeof streamText<TOOLS>>[0])
  }

  async function segment(ctx: RunContext, items: SettledItem[]): Promise<RunOutcome> {
    const earlier: StreamFrame[] = []
    for await (const frame of ctx.conversation()) earlier.push(frame)
    const stored: StreamFrame[] = []
    for await (const frame of ctx.history()) stored.push(frame)
    // An approved call whose input breaks its tool's schema does not run: its error is its
    // result (written, and given to the model), and the SDK is not asked to run it.
    const invalid = await invalidApprovedInputs(stored, items, tools)
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
    const messages = [
      ...completedCalls(framesToMessages(earlier, { askTool })),
      ...(await inputMessages(input)),
      ...resumeMessages(framesToMessages(stored, { askTool }), runnable),
    ]
    const result = await stream(messages, ctx.signal)
    return writeParts(ctx, result.fullStream as never, {
      tools,
      approval,
      settled: new Set(items.map((item) => item.id)),
    })
  }

  return {
    start: (ctx) => segment(ctx, []),
    resume: (ctx) => segment(ctx, ctx.items),
  }
}

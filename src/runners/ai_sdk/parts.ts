import type { TextStreamPart, ToolSet } from 'ai'
import type { AgentStreamErrorCode, StreamFrame, ToolConfirmation } from '../../core/frames.js'
import type { RunContext, RunOutcome } from '../../runner/contract.js'
import { isAskTool, type AskInput } from './ask_tool.js'
import { failureCode } from './failure.js'
import { toolInputSchema } from './tool_input.js'
import { signedRequestFrame } from './signed_approval.js'
import { callToolKind, staticToolKind, type ToolApprovalSetting } from './tool_approval.js'

/**
 * A call that asks for approval, as {@link ApprovalOptions}' functions get it: `reason` is the
 * one the SDK's `toolApproval` gave with `{ type: 'user-approval', reason }`, if any.
 */
export interface ApprovalCall {
  toolName: string
  input: unknown
  reason?: string
}

/** How a call that needs approval is asked (the `approval` frame's fields). */
export interface ApprovalOptions {
  /** Who may decide: `'requester'` (the default) or a role; per call when a function. */
  approver?: string | ((call: ApprovalCall) => string)
  /** The request lapses this long after it is asked, in milliseconds. Default: never. */
  expiresInMs?: number
  /**
   * Display copy for the person deciding. Default: `{ title: 'Run <toolName>?' }`, with the
   * `toolApproval` reason as its `description` when there is one.
   */
  confirmation?: (call: ApprovalCall) => ToolConfirmation
}

/** What {@link writeParts} needs besides the stream. */
export interface PartsPlan {
  tools: ToolSet
  /** The call-level `toolApproval` when the runner knows it (`streamText`'s settings). */
  toolApproval?: ToolApprovalSetting
  approval: ApprovalOptions
  /** Calls whose settlement is stored already (a resume's items): their denial is not written again. */
  settled: Set<string>
}

/** The checkpoint a parked segment stores: which calls it waits for (the rest is in frames). */
export interface AiSdkCheckpoint {
  runner: 'ai-sdk'
  waiting: string[]
}

/** An error's text as the AI SDK gives a failed tool's error to the model (`getErrorMessage`). */
function errorText(error: unknown): string {
  if (error === null || error === undefined) return 'unknown error'
  if (typeof error === 'string') return error
  if (error instanceof Error) return error.toString()
  return JSON.stringify(error)
}

/** A usage object as JSON numbers (the provider's `raw` usage left out: it may be large). */
function usageOf(usage: unknown): Record<string, unknown> {
  const copy = { ...(usage ?? {}) } as Record<string, unknown>
  delete copy.raw
  return JSON.parse(JSON.stringify(copy))
}

/**
 * Write the AI SDK's full stream into the run's stream, part by part (docs/ai-sdk.md:
 * the table of part -> frame), and tell how the segment ended: `parked` when a call asked for
 * approval (an `approval` frame) or an asking tool was called (an `elicitation` frame), `failed`
 * with a stable code on an `error` part or a throw (never its text), `cancelled` on `abort`,
 * else `finished`.
 */
export async function writeParts(
  ctx: RunContext,
  parts: AsyncIterable<TextStreamPart<ToolSet>>,
  plan: PartsPlan
): Promise<RunOutcome> {
  const write = (frame: StreamFrame) => ctx.writer.write(frame)
  const kind = (name: string) => staticToolKind(name, plan.tools, plan.toolApproval)
  // A call's `tool-input-available` waits for the next part: the SDK emits the call's
  // approval request right after it when its approval setting asks for one, and the frame's
  // `toolKind` says what the SDK decided for this call (`callToolKind`).
  let held: { id: string; frame: Extract<StreamFrame, { t: 'event' }> } | null = null
  const release = async (kindOf: (name: string) => 'read' | 'action') => {
    if (!held) return
    const { frame } = held
    held = null
    const event = frame.event as { name: string; toolKind: 'read' | 'action' }
    await write({ ...frame, event: { ...frame.event, toolKind: kindOf(event.name) } as never })
  }
  const reasoning = new Map<string, string>()
  const asking = new Set<string>()
  const waiting: string[] = []
  let failed: AgentStreamErrorCode | null = null
  let aborted = false
  const endReasoning = async (id: string) => {
    const text = reasoning.get(id)
    reasoning.delete(id)
    if (text) await write({ t: 'event', event: { kind: 'reasoning', text } })
  }
  try {
    for await (const part of parts) {
      if (held) {
        const asked = part.type === 'tool-approval-request' && part.toolCall.toolCallId === held.id
        await release(() => callToolKind(asked))
      }
      switch (part.type) {
        case 'start-step':
          await write({ t: 'event', event: { kind: 'step-start' } })
          break
        case 'finish-step':
          for (const id of [...reasoning.keys()]) await endReasoning(id)
          await write({
            t: 'event',
            event: {
              kind: 'step-finish',
              usage: usageOf(part.usage),
              ...(part.response?.modelId ? { model: part.response.modelId } : {}),
            },
          })
          break
        case 'text-delta':
          if (part.text) await write({ t: 'text', v: part.text })
          break
        case 'reasoning-start':
          reasoning.set(part.id, '')
          break
        case 'reasoning-delta':
          // One `reasoning` event per block: readers get it whole (it is private by default).
          reasoning.set(part.id, (reasoning.get(part.id) ?? '') + part.text)
          break
        case 'reasoning-end':
          await endReasoning(part.id)
          break
        case 'tool-input-start':
          // A question set is shown as its `elicitation`, not as a tool call.
          if (isAskTool(plan.tools[part.toolName])) {
            asking.add(part.id)
            break
          }
          await write({
            t: 'event',
            event: {
              kind: 'tool-input-start',
              id: part.id,
              name: part.toolName,
              toolKind: kind(part.toolName),
            },
          })
          break
        case 'tool-input-delta':
          if (part.delta && !asking.has(part.id)) {
            await write({
              t: 'event',
              event: { kind: 'tool-input-delta', id: part.id, delta: part.delta },
            })
          }
          break
        case 'tool-call': {
          if (!isAskTool(plan.tools[part.toolName]) || part.invalid) {
            const frame = {
              t: 'event' as const,
              event: {
                kind: 'tool-input-available' as const,
                id: part.toolCallId,
                name: part.toolName,
                input: part.input ?? {},
                toolKind: kind(part.toolName),
              },
            }
            // An invalid call is not resolved by the SDK: its tool's kind is the label.
            if (part.invalid) await write(frame)
            else held = { id: part.toolCallId, frame }
          } else {
            const input = part.input as AskInput
            await write({
              t: 'elicitation',
              runId: ctx.runId,
              id: part.toolCallId,
              request: {
                id: part.toolCallId,
                source: 'ask',
                ...(input.preamble ? { preamble: input.preamble } : {}),
                questions: input.questions,
              },
            })
            waiting.push(part.toolCallId)
          }
          break
        }
        case 'tool-approval-request': {
          // Decided by the SDK itself (`toolApproval` said so): nothing for a person.
          if (part.isAutomatic) break
          const call: ApprovalCall = {
            toolName: part.toolCall.toolName,
            input: part.toolCall.input,
            ...(part.reason ? { reason: part.reason } : {}),
          }
          // Signed by the SDK (`experimental_toolApprovalSecret`): its approval id and
          // signature are stored, so a resume hands the SDK the very request it signed.
          if (part.signature) {
            await write(
              signedRequestFrame({
                id: part.toolCall.toolCallId,
                approvalId: part.approvalId,
                signature: part.signature,
              })
            )
          }
          const approver = plan.approval.approver
          const tool = Object.hasOwn(plan.tools, call.toolName)
            ? plan.tools[call.toolName]
            : undefined
          const inputSchema = part.signature ? false : await toolInputSchema(tool)
          await write({
            t: 'approval',
            runId: ctx.runId,
            id: part.toolCall.toolCallId,
            toolName: call.toolName,
            input: call.input ?? {},
            // What an edit of the input is checked against, wherever it is made; a signed
            // request runs only the input it was signed for, so no edit is allowed.
            ...(inputSchema === undefined ? {} : { inputSchema }),
            confirmation: plan.approval.confirmation?.(call) ?? {
              title: `Run ${call.toolName}?`,
              ...(call.reason ? { description: call.reason } : {}),
            },
            approver: typeof approver === 'function' ? approver(call) : (approver ?? 'requester'),
            ...(plan.approval.expiresInMs
              ? { expiresAt: new Date(Date.now() + plan.approval.expiresInMs).toISOString() }
              : {}),
          })
          waiting.push(part.toolCall.toolCallId)
          break
        }
        case 'tool-result':
          // Preliminary results are previews of a streaming tool: the final one follows.
          if (!part.preliminary) {
            await write({
              t: 'event',
              event: { kind: 'tool-output', id: part.toolCallId, output: part.output },
            })
          }
          break
        case 'tool-error':
          // Stored for the model (the doors hide it from readers unless configured).
          await write({
            t: 'event',
            event: { kind: 'tool-output-error', id: part.toolCallId, error: errorText(part.error) },
          })
          break
        case 'tool-output-denied':
          // A person's denial was stored when it was decided; the SDK's own is written here.
          if (!plan.settled.has(part.toolCallId)) {
            await write({
              t: 'event',
              event: { kind: 'tool-output-denied', id: part.toolCallId, status: 'rejected' },
            })
          }
          break
        case 'source':
          await write({
            t: 'event',
            event:
              part.sourceType === 'url'
                ? {
                    kind: 'source',
                    id: part.id,
                    sourceType: 'url',
                    url: part.url,
                    ...(part.title ? { title: part.title } : {}),
                  }
                : {
                    kind: 'source',
                    id: part.id,
                    sourceType: 'document',
                    title: part.title,
                    mediaType: part.mediaType,
                    ...(part.filename ? { filename: part.filename } : {}),
                  },
          })
          break
        case 'file':
          await write({
            t: 'event',
            event: {
              kind: 'file',
              mediaType: part.file.mediaType,
              url: `data:${part.file.mediaType};base64,${part.file.base64}`,
            },
          })
          break
        case 'error':
          failed ??= failureCode(part.error)
          break
        case 'abort':
          aborted = true
          break
      }
    }
    // The stream ended right after a call: the SDK resolved nothing more for it.
    await release(kind)
  } catch (error) {
    failed ??= ctx.signal.aborted ? null : failureCode(error)
    aborted ||= ctx.signal.aborted
    // The call itself was said: it stays in the stream (its record, for a takeover or a turn).
    await release(kind).catch(() => undefined)
  }
  if (failed) return { status: 'failed', code: failed }
  if (aborted) return { status: 'cancelled' }
  if (waiting.length > 0) {
    return { status: 'parked', checkpoint: { runner: 'ai-sdk', waiting } satisfies AiSdkCheckpoint }
  }
  return { status: 'finished' }
}

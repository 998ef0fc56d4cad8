import type { AgentStreamErrorCode, StreamFrame, ToolConfirmation } from '../../core/frames.js'
import type { RunContext } from '../../runner/contract.js'

/** How a call that needs approval is asked (the `approval` frame's fields). */
export interface ApprovalOptions {
  /** Who may decide: `'requester'` (the default) or a role; per call when a function. */
  approver?: string | ((call: { toolName: string; input: unknown }) => string)
  /** The request lapses this long after it is asked, in milliseconds. Default: never. */
  expiresInMs?: number
  /** Display copy for the person deciding. Default: `{ title: 'Run <toolName>?' }`. */
  confirmation?: (call: { toolName: string; input: unknown }) => ToolConfirmation
}

/** What {@link writeChunks} needs besides the chunks. */
export interface ChunkPlan {
  approval: ApprovalOptions
  /** Whether a tool asks for approval (`'action'`) or not (`'read'`), by name. */
  toolKind: (name: string) => 'read' | 'action'
  /** Calls already asked or settled in this run: their approval and denial are not written again. */
  known: Set<string>
  /** Told about every error Mastra reports (readers only get a fixed sentence). */
  onError?: (error: unknown) => void
}

/** How one Mastra stream ended, as far as the frames go. */
export interface ChunksOutcome {
  /** The calls this stream asked a person to approve (new ones only). */
  asked: string[]
  failed: AgentStreamErrorCode | null
  aborted: boolean
}

/** A Mastra chunk, as far as this runner reads it (`ChunkType` of `@mastra/core/stream`). */
interface Chunk {
  type: string
  payload?: any
}

/** An error's text as a tool's error is given to the model. */
function errorText(error: unknown): string {
  if (error === null || error === undefined) return 'unknown error'
  if (typeof error === 'string') return error
  if (error instanceof Error) return error.message
  if (typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message
  }
  return JSON.stringify(error)
}

/** A value as JSON (what a frame may hold): `undefined` and what JSON cannot hold dropped. */
function json(value: unknown): unknown {
  if (value === undefined) return null
  try {
    return JSON.parse(JSON.stringify(value)) ?? null
  } catch {
    return null
  }
}

/**
 * The stable failure code of an error Mastra reported: a quota or rate limit (HTTP 402/429) is
 * `quota_exceeded`, anything else `run_failed`. Only the code reaches a reader, never the text.
 */
export function failureCode(error: unknown): AgentStreamErrorCode {
  for (let cause = error, depth = 0; cause && depth < 5; depth++) {
    const status = (cause as { statusCode?: unknown }).statusCode
    if (status === 429 || status === 402) return 'quota_exceeded'
    cause = (cause as { cause?: unknown }).cause
  }
  return 'run_failed'
}

/**
 * Write a Mastra agent stream (`fullStream` of `agent.stream()`, `approveToolCall()`,
 * `declineToolCall()`) into the run's stream, chunk by chunk (docs/runners/mastra.md: the table
 * of chunk -> frame). A chunk it does not know is skipped. A `tool-call-approval` chunk writes
 * one `approval` frame (its id the tool call's id); `error` and `tripwire` fail the segment with
 * a stable code; `abort`, or the run's signal, cancels it.
 */
export async function writeChunks(
  ctx: RunContext,
  chunks: AsyncIterable<Chunk>,
  plan: ChunkPlan
): Promise<ChunksOutcome> {
  const write = (frame: StreamFrame) => ctx.writer.write(frame)
  const reasoning = new Map<string, string>()
  const asked: string[] = []
  let failed: AgentStreamErrorCode | null = null
  let aborted = false
  const endReasoning = async (id: string) => {
    const text = reasoning.get(id)
    reasoning.delete(id)
    if (text) await write({ t: 'event', event: { kind: 'reasoning', text } })
  }
  try {
    for await (const chunk of chunks) {
      const p = chunk.payload ?? {}
      switch (chunk.type) {
        case 'step-start':
          await write({ t: 'event', event: { kind: 'step-start' } })
          break
        case 'step-finish': {
          for (const id of [...reasoning.keys()]) await endReasoning(id)
          const usage = json(p.output?.usage)
          const model = p.metadata?.modelId ?? p.response?.modelId
          await write({
            t: 'event',
            event: {
              kind: 'step-finish',
              ...(usage && typeof usage === 'object'
                ? { usage: usage as Record<string, unknown> }
                : {}),
              ...(typeof model === 'string' ? { model } : {}),
            },
          })
          break
        }
        case 'text-delta':
          if (typeof p.text === 'string' && p.text) await write({ t: 'text', v: p.text })
          break
        case 'reasoning-start':
          reasoning.set(String(p.id), '')
          break
        case 'reasoning-delta':
          // One `reasoning` event per block: readers get it whole (it is private by default).
          if (typeof p.text === 'string') {
            reasoning.set(String(p.id), (reasoning.get(String(p.id)) ?? '') + p.text)
          }
          break
        case 'reasoning-end':
          await endReasoning(String(p.id))
          break
        case 'tool-call-input-streaming-start':
          await write({
            t: 'event',
            event: {
              kind: 'tool-input-start',
              id: String(p.toolCallId),
              name: String(p.toolName),
              toolKind: plan.toolKind(String(p.toolName)),
            },
          })
          break
        case 'tool-call-delta':
          if (typeof p.argsTextDelta === 'string' && p.argsTextDelta) {
            await write({
              t: 'event',
              event: { kind: 'tool-input-delta', id: String(p.toolCallId), delta: p.argsTextDelta },
            })
          }
          break
        case 'tool-call':
          await write({
            t: 'event',
            event: {
              kind: 'tool-input-available',
              id: String(p.toolCallId),
              name: String(p.toolName),
              input: json(p.args ?? {}),
              toolKind: plan.toolKind(String(p.toolName)),
            },
          })
          break
        case 'tool-call-approval': {
          const id = String(p.toolCallId)
          // Asked again by a resumed stream while a person's decision is already known.
          if (plan.known.has(id)) break
          const call = { toolName: String(p.toolName), input: json(p.args ?? {}) }
          const approver = plan.approval.approver
          await write({
            t: 'approval',
            runId: ctx.runId,
            id,
            toolName: call.toolName,
            input: call.input,
            // Mastra runs a call with the input it stored: an edit is refused where it is made.
            inputSchema: false,
            confirmation: plan.approval.confirmation?.(call) ?? { title: `Run ${call.toolName}?` },
            approver: typeof approver === 'function' ? approver(call) : (approver ?? 'requester'),
            ...(plan.approval.expiresInMs
              ? { expiresAt: new Date(Date.now() + plan.approval.expiresInMs).toISOString() }
              : {}),
          })
          plan.known.add(id)
          asked.push(id)
          break
        }
        case 'tool-call-suspended':
          // A tool that called `suspend()` waits for data this runner cannot ask for.
          plan.onError?.(new Error(`the tool ${String(p.toolName)} suspended: not supported`))
          failed ??= 'run_failed'
          break
        case 'tool-result':
          await write({
            t: 'event',
            event: p.isError
              ? { kind: 'tool-output-error', id: String(p.toolCallId), error: errorText(p.result) }
              : { kind: 'tool-output', id: String(p.toolCallId), output: json(p.result) },
          })
          break
        case 'tool-error':
          // Stored for the model (the doors hide it from readers unless configured).
          await write({
            t: 'event',
            event: {
              kind: 'tool-output-error',
              id: String(p.toolCallId),
              error: errorText(p.error),
            },
          })
          break
        case 'tool-output-denied':
          // A person's denial was stored when it was decided; only Mastra's own is written.
          if (!plan.known.has(String(p.toolCallId))) {
            await write({
              t: 'event',
              event: { kind: 'tool-output-denied', id: String(p.toolCallId), status: 'rejected' },
            })
          }
          break
        case 'source':
          await write({
            t: 'event',
            event:
              p.sourceType === 'url'
                ? {
                    kind: 'source',
                    id: String(p.id),
                    sourceType: 'url',
                    url: String(p.url),
                    ...(p.title ? { title: String(p.title) } : {}),
                  }
                : {
                    kind: 'source',
                    id: String(p.id),
                    sourceType: 'document',
                    title: String(p.title ?? ''),
                    ...(p.mimeType ? { mediaType: String(p.mimeType) } : {}),
                    ...(p.filename ? { filename: String(p.filename) } : {}),
                  },
          })
          break
        case 'file': {
          const base64 =
            typeof p.base64 === 'string'
              ? p.base64
              : p.data instanceof Uint8Array
                ? Buffer.from(p.data).toString('base64')
                : typeof p.data === 'string'
                  ? p.data
                  : null
          if (base64 !== null && typeof p.mimeType === 'string') {
            await write({
              t: 'event',
              event: {
                kind: 'file',
                mediaType: p.mimeType,
                url: `data:${p.mimeType};base64,${base64}`,
              },
            })
          }
          break
        }
        case 'error':
          plan.onError?.(p.error)
          failed ??= failureCode(p.error)
          break
        case 'tripwire':
          // A processor of the agent refused the input or the output.
          plan.onError?.(p)
          failed ??= 'output_rejected'
          break
        case 'abort':
          aborted = true
          break
        // Everything else (start, text-start/-end, finish, response-metadata, raw, workflow
        // and network chunks, and any chunk a later Mastra adds) is not the reader's: skipped.
      }
    }
  } catch (error) {
    if (!ctx.signal.aborted) {
      plan.onError?.(error)
      failed ??= failureCode(error)
    }
    aborted ||= ctx.signal.aborted
  }
  for (const id of [...reasoning.keys()]) await endReasoning(id)
  return { asked, failed, aborted: aborted || ctx.signal.aborted }
}

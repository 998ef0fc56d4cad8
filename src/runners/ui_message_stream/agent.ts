import type { UIMessage, UIMessageChunk } from 'ai'
import type { StreamFrame } from '../../core/frames.js'
import { userMessageOf } from '../../core/user_message.js'
import { Wake } from '../../core/wake.js'
import type { SettledItem } from '../../parking/types.js'
import type { AgentRunner, RunContext, RunOutcome } from '../../runner/contract.js'
import {
  UiChunkReader,
  type ApprovalOptions,
  type AskedApproval,
  type ChunkCall,
} from './chunks.js'
import { readCheckpoint, type UiMessageStreamCheckpoint } from './checkpoint.js'
import { NOT_RUN_SENTENCES, framesToUiMessages, type Responded } from './messages.js'
import { unreadableOutcome } from '../shared/checkpoint_unreadable.js'

/** What the stream producer is called with, once per segment. */
export interface UiMessageStreamArgs {
  /**
   * The conversation as `useChat` would send it: the thread's earlier turns, what the person
   * said, what the agent did so far in this run; on a resume the decided calls in
   * `approval-responded`.
   */
  messages: UIMessage[]
  threadId: string
  runId: string
  /** The run's input as the door gave it (`{ message, context, body? | forwardedProps? }`). */
  input: unknown
  /** Aborted when the run is cancelled. */
  signal: AbortSignal
  /** Whether this segment continues a park (the messages end with the decisions). */
  resumed: boolean
}

/** A UI message stream, or an iterable of its chunks. */
export type UiMessageStreamSource = ReadableStream<UIMessageChunk> | AsyncIterable<UIMessageChunk>

/** Options of {@link uiMessageStreamAgent}. */
export interface UiMessageStreamAgentOptions {
  /**
   * Makes the segment's UI message stream: `streamText(...).toUIMessageStream()`, Mastra's
   * `toAISdkStream(..., { version: 'v7' })` or `handleChatStream` (its default v5 sends
   * approvals as data parts, which do not park), the OpenAI Agents extensions' UI stream,
   * anything that speaks the AI SDK's UI message stream protocol.
   */
  stream: (args: UiMessageStreamArgs) => UiMessageStreamSource | Promise<UiMessageStreamSource>
  /** How approval requests are asked (approver, expiry, display copy). */
  approval?: ApprovalOptions
  /** Told about every error: an `error` chunk's text or a throw. Readers get a fixed sentence. */
  onError?: (error: unknown) => void
}

const RESULT_KINDS = new Set(['tool-output', 'tool-output-error', 'tool-output-denied'])
const UNFINISHED = new Set(['input-streaming', 'input-available', 'approval-requested'])

/**
 * How a source is read, and cancelled: a `ReadableStream` through its reader (a cancel ends a
 * pending read at once), any other iterable through its iterator's `return`.
 */
function readerOf(source: UiMessageStreamSource) {
  if (source instanceof ReadableStream) {
    const reader = source.getReader()
    return {
      next: () => reader.read() as Promise<IteratorResult<UIMessageChunk>>,
      cancel: () => void reader.cancel().catch(() => {}),
    }
  }
  const iterator = source[Symbol.asyncIterator]()
  return {
    next: () => iterator.next(),
    cancel: () => void iterator.return?.()?.catch(() => {}),
  }
}

/** The calls `frames` hold and the ids that have their result. */
function storedCalls(frames: StreamFrame[]) {
  const calls = new Map<string, ChunkCall>()
  const answered = new Set<string>()
  for (const frame of frames) {
    if (frame.t !== 'event') continue
    const event = frame.event
    if (event.kind === 'tool-input-available')
      calls.set(event.id, { name: event.name, input: event.input })
    else if (RESULT_KINDS.has(event.kind)) answered.add((event as { id: string }).id)
  }
  return { calls, answered }
}

/** Earlier turns as a producer may be sent them: a call that never got its result is left out. */
function finishedTurns(messages: UIMessage[]): UIMessage[] {
  return messages
    .map((message) => ({
      ...message,
      parts: message.parts.filter(
        (part) => !('toolCallId' in part) || !UNFINISHED.has((part as { state: string }).state)
      ),
    }))
    .filter((message) => message.parts.length > 0)
}

/** A resume's decisions as the tool parts' `approval-responded` (the producer's own ids). */
function decisions(items: SettledItem[], asked: Record<string, AskedApproval>) {
  const responded = new Map<string, Responded>()
  for (const item of items) {
    if (item.kind !== 'approval') continue
    const approved = item.status === 'approved'
    responded.set(item.id, {
      approval: asked[item.id],
      approved,
      ...(approved
        ? {}
        : {
            reason:
              item.reason ??
              NOT_RUN_SENTENCES[item.status as keyof typeof NOT_RUN_SENTENCES] ??
              NOT_RUN_SENTENCES.rejected,
          }),
      ...(approved && item.input !== undefined ? { input: item.input } : {}),
    })
  }
  return responded
}

/**
 * An {@link AgentRunner} for any producer of the AI SDK's UI message stream
 * (docs/runners/ui_message_stream.md): each segment calls `stream` with the thread's
 * conversation as UI messages and writes its chunks as frames ({@link UiChunkReader}). A
 * `tool-approval-request` parks the run on an `approval` under the call's id (one per request);
 * the checkpoint keeps each request's approval id (and signature). `resume` (any replica, after
 * any restart) calls `stream` again with the same messages, each decided call's tool part in
 * `approval-responded` (`approval: { id, approved, reason }`, the approved input), as `useChat`
 * sends them. An `error` chunk or a throw fails the run with a fixed sentence.
 */
export function uiMessageStreamAgent(options: UiMessageStreamAgentOptions): AgentRunner {
  async function segment(
    ctx: RunContext,
    resume: { checkpoint: UiMessageStreamCheckpoint; items: SettledItem[] } | null
  ): Promise<RunOutcome> {
    const earlier: StreamFrame[] = []
    for await (const frame of ctx.conversation()) earlier.push(frame)
    const stored: StreamFrame[] = []
    for await (const frame of ctx.history()) stored.push(frame)
    const asked = new Map(Object.entries(resume?.checkpoint.approvals ?? {}))
    const input = ctx.input
    // A run a door started stores what the person said as its first frame; otherwise the
    // input's text is the person's message, before what the run did.
    const text =
      typeof input === 'string' ? input : (input as { message?: unknown } | null)?.message
    const typed: UIMessage[] =
      !stored.some((frame) => userMessageOf(frame)) && typeof text === 'string' && text
        ? [{ id: `${ctx.runId}-input`, role: 'user', parts: [{ type: 'text', text }] }]
        : []
    const messages = [
      ...finishedTurns(framesToUiMessages(earlier, 'c')),
      ...typed,
      ...framesToUiMessages(
        stored,
        `${ctx.runId}`,
        asked,
        resume ? decisions(resume.items, resume.checkpoint.approvals) : new Map()
      ),
    ]
    const { calls, answered } = storedCalls(stored)
    const reader = new UiChunkReader(ctx.runId, options.approval, answered, calls)
    const abort = new AbortController()
    const stop = () => abort.abort()
    if (ctx.signal.aborted) stop()
    ctx.signal.addEventListener('abort', stop, { once: true })
    let thrown = false
    let chunks: ReturnType<typeof readerOf> | undefined
    try {
      const source = await options.stream({
        messages,
        threadId: ctx.threadId,
        runId: ctx.runId,
        input,
        signal: abort.signal,
        resumed: resume !== null,
      })
      chunks = readerOf(source)
      // A stop ends the read at once, whether or not the producer heeds its signal.
      const stopped = new Wake<IteratorResult<UIMessageChunk>>()
      const done = () => stopped.fire({ done: true, value: undefined })
      if (abort.signal.aborted) done()
      abort.signal.addEventListener('abort', done, { once: true })
      while (!abort.signal.aborted) {
        const next = await stopped.race(chunks.next())
        if (next.done) break
        for (const frame of reader.push(next.value)) await ctx.writer.write(frame)
      }
    } catch (error) {
      if (!abort.signal.aborted) {
        thrown = true
        options.onError?.(error)
      }
    } finally {
      ctx.signal.removeEventListener('abort', stop)
      // The producer's stream is cancelled (not awaited: a producer may never answer).
      if (abort.signal.aborted) chunks?.cancel()
    }
    if (ctx.signal.aborted || reader.aborted) return { status: 'cancelled' }
    for (const error of reader.errors) options.onError?.(error)
    if (thrown || reader.failed) return { status: 'failed', code: 'run_failed' }
    if (reader.asked.size > 0) {
      return {
        status: 'parked',
        checkpoint: {
          runner: 'ui-message-stream',
          version: 1,
          approvals: { ...Object.fromEntries(asked), ...Object.fromEntries(reader.asked) },
        } satisfies UiMessageStreamCheckpoint,
      }
    }
    return { status: 'finished' }
  }

  return {
    start: (ctx) => segment(ctx, null),
    async resume(ctx) {
      let checkpoint: UiMessageStreamCheckpoint
      try {
        checkpoint = readCheckpoint(ctx.checkpoint, ctx.items)
      } catch (error) {
        return unreadableOutcome(error, options.onError)
      }
      return segment(ctx, { checkpoint, items: ctx.items })
    },
  }
}

import { randomUUID } from 'node:crypto'
import type { AbstractAgent } from '@ag-ui/client'
import type { Context, Message } from '@ag-ui/core'
import type { StreamFrame } from '../../core/frames.js'
import { userMessageFrame, userMessageOf } from '../../core/user_message.js'
import type { SettledItem } from '../../parking/types.js'
import type { AgentRunner, RunContext, RunOutcome } from '../../runner/contract.js'
import { readCheckpoint, type AgUiAgentCheckpoint } from './checkpoint.js'
import { AgUiEventReader, type StreamedCall } from './events.js'
import { SharedStateMirror, stateOf } from './shared_state.js'
import { isStateObject } from '../../core/agent_state.js'
import { parkInterrupts, resumeEntries, type ApprovalOptions } from './interrupts.js'
import { framesToAgUiMessages, withoutUnansweredCalls } from './messages.js'
import { unreadableOutcome } from '../shared/checkpoint_unreadable.js'

/** Options of {@link aguiAgent}. */
export interface AgUiAgentOptions {
  /**
   * The agent: an `AbstractAgent` of `@ag-ui/client` (an `HttpAgent` pointed at a remote agent,
   * a framework's bridge, a class of your own), cloned for every segment (`agent.clone()`: an
   * agent holds one thread's messages and state, and runs one run at a time); or a function
   * that makes one per segment.
   */
  agent: AbstractAgent | ((run: { threadId: string; runId: string }) => AbstractAgent)
  /** How tool-call interrupts are asked (approver, display copy). */
  approval?: ApprovalOptions
  /**
   * Told about every error: a `RUN_ERROR` event (its message and code) or a thrown error (the
   * transport, the client's checks). Readers only get a fixed sentence.
   */
  onError?: (error: unknown) => void
}

/** The calls `frames` hold, as a reader knows them, and the ids that have their result. */
function storedCalls(frames: StreamFrame[]) {
  const calls = new Map<string, StreamedCall>()
  const answered = new Set<string>()
  for (const frame of frames) {
    if (frame.t !== 'event') continue
    const event = frame.event
    if (event.kind === 'tool-input-available') {
      calls.set(event.id, {
        name: event.name,
        args: JSON.stringify(event.input ?? {}),
        ended: true,
      })
    } else if (
      event.kind === 'tool-output' ||
      event.kind === 'tool-output-error' ||
      event.kind === 'tool-output-denied'
    ) {
      answered.add(event.id)
    }
  }
  return { calls, answered }
}

const RESULT_KINDS = new Set(['tool-output', 'tool-output-error', 'tool-output-denied'])

/**
 * An {@link AgentRunner} for any AG-UI agent (docs/runners/agui_agent.md): each segment is one
 * AG-UI run of the agent, through the client's own `runAgent` (its checks and chunk expansion),
 * on the thread's conversation rebuilt from the stored frames (`RunAgentInput.messages`: the
 * earlier turns, what the person said, what the agent said and did), its state as it last was.
 * Its events become frames ({@link AgUiEventReader}). A `RUN_FINISHED` with an `interrupt`
 * outcome parks the run: an `approval` per interrupt that names a tool call, an `elicitation`
 * per other one. `resume` (any replica, after any restart) runs the agent again with the same
 * messages and `resume[]`, one entry per interrupt, from the decisions. A `RUN_ERROR` or a throw
 * fails the run with a fixed sentence; its text goes to `onError` only.
 */
export function aguiAgent(options: AgUiAgentOptions): AgentRunner {
  const make = (threadId: string, runId: string): AbstractAgent => {
    const agent =
      typeof options.agent === 'function'
        ? options.agent({ threadId, runId })
        : options.agent.clone()
    agent.threadId = threadId
    return agent
  }

  async function segment(
    ctx: RunContext,
    resume: { checkpoint: AgUiAgentCheckpoint; items: SettledItem[] } | null
  ): Promise<RunOutcome> {
    const earlier: StreamFrame[] = []
    for await (const frame of ctx.conversation()) earlier.push(frame)
    const stored: StreamFrame[] = []
    for await (const frame of ctx.history()) stored.push(frame)
    // The agent is told the decisions through `resume[]`: the results the decisions stored
    // (a denial, a question set's answers) are not also sent as tool messages.
    const deciding = new Set(resume?.items.map((item) => item.id) ?? [])
    const said = stored.filter(
      (frame) =>
        !(
          frame.t === 'event' &&
          RESULT_KINDS.has(frame.event.kind) &&
          deciding.has((frame.event as { id: string }).id)
        )
    )
    const input = (ctx.input ?? {}) as Record<string, unknown>
    // A run a door started stores what the person said as its first frame; otherwise the
    // input's text is the person's message, before what the run did.
    const text = typeof ctx.input === 'string' ? ctx.input : input.message
    const typed: StreamFrame[] =
      !stored.some((frame) => userMessageOf(frame)) && typeof text === 'string' && text
        ? [userMessageFrame({ id: `${ctx.runId}-input`, parts: [{ type: 'text', text }] })]
        : []
    // The earlier turns as they ended (a call one left open is left out), then this run.
    const messages: Message[] = [
      ...withoutUnansweredCalls(framesToAgUiMessages(earlier, 'm')),
      ...framesToAgUiMessages([...typed, ...said], `m-${ctx.runId}`),
    ]

    const agent = make(ctx.threadId, ctx.runId)
    agent.messages = messages
    // The remote's `RunAgentInput.state`: the page's state (`ctx.input.state`: at the start, or
    // sent with the resume), else the agent's state as the thread's frames left it.
    const page = isStateObject(input.state) ? input.state : null
    const remote = page ?? stateOf([...earlier, ...stored])
    if (remote !== null) agent.state = remote
    // The decisions are checked here, against the checkpoint: the client's own pre-flight
    // (expiry by this replica's clock) is not asked again.
    agent.pendingInterrupts = []

    const { calls, answered } = storedCalls(stored)
    const mirror = new SharedStateMirror(remote ?? {}, stateOf(stored))
    const reader = new AgUiEventReader(answered, calls, mirror)
    let writing: Promise<void> = Promise.resolve()
    let writeFailed: unknown = null
    const onEvent = ({ event }: { event: Parameters<AgUiEventReader['push']>[0] }) => {
      const frames = reader.push(event)
      writing = writing.then(async () => {
        if (writeFailed) return
        try {
          for (const frame of frames) await ctx.writer.write(frame)
        } catch (error) {
          writeFailed = error
          agent.abortRun()
          void agent.detachActiveRun()
        }
      })
      return writing
    }
    const stop = () => {
      agent.abortRun()
      void agent.detachActiveRun()
    }
    if (ctx.signal.aborted) stop()
    ctx.signal.addEventListener('abort', stop, { once: true })
    let thrown = false
    try {
      await agent.runAgent(
        {
          runId: resume ? `${ctx.runId}-${randomUUID()}` : ctx.runId,
          ...(Array.isArray(input.context) ? { context: input.context as Context[] } : {}),
          ...(input.forwardedProps !== undefined ? { forwardedProps: input.forwardedProps } : {}),
          ...(resume ? { resume: resumeEntries(resume.checkpoint.parked, resume.items) } : {}),
        },
        { onEvent }
      )
    } catch (error) {
      thrown = true
      if (!ctx.signal.aborted) options.onError?.(error)
    } finally {
      ctx.signal.removeEventListener('abort', stop)
    }
    await writing
    if (writeFailed) throw writeFailed
    if (ctx.signal.aborted) return { status: 'cancelled' }
    if (thrown) return { status: 'failed', code: 'run_failed' }
    const end = reader.end
    if (end.type === 'error') {
      options.onError?.(reader.error)
      return { status: 'failed', code: 'run_failed' }
    }
    if (end.type === 'cancelled') return { status: 'cancelled' }
    if (end.type === 'interrupt' && end.interrupts.length > 0) {
      const { frames, parked } = parkInterrupts(
        ctx.runId,
        end.interrupts,
        reader.calls,
        options.approval
      )
      for (const frame of frames) await ctx.writer.write(frame)
      return {
        status: 'parked',
        checkpoint: { runner: 'agui-agent', version: 1, parked } satisfies AgUiAgentCheckpoint,
      }
    }
    return { status: 'finished' }
  }

  return {
    start: (ctx) => segment(ctx, null),
    async resume(ctx) {
      let checkpoint: AgUiAgentCheckpoint
      try {
        checkpoint = readCheckpoint(ctx.checkpoint, ctx.items)
      } catch (error) {
        return unreadableOutcome(error, options.onError)
      }
      return segment(ctx, { checkpoint, items: ctx.items })
    },
  }
}

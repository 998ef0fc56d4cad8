import type { LucidSinkWriter } from '../sink/writer.js'
import type { RunMeta } from '../core/run.js'
import { USER_MESSAGE, type DeliveredFrame, type StreamFrame } from '../core/frames.js'
import { InvalidFrameError, StreamClosedError } from '../errors.js'
import type { RunContext } from './contract.js'

/** Whether a runner's frame is one only the package writes (what the person said). */
const isReserved = (frame: StreamFrame) =>
  frame.t === 'event' && (frame.event as { kind?: unknown }).kind === USER_MESSAGE

/** What a {@link RunContext} reads through the driver: the stream's frames, the thread's turns. */
export interface RunContextReads {
  /** The stored frames of `streamRunId` (`RunContext.history`), after `writer` flushed. */
  history(writer: LucidSinkWriter, streamRunId: string): AsyncIterable<DeliveredFrame>
  /** The thread's earlier turns (`RunContext.conversation`). */
  conversation(meta: RunMeta): AsyncIterable<DeliveredFrame>
}

/**
 * The {@link RunContext} a runner gets for one segment of `meta`'s run: its ids, input, signal
 * and principal, a writer that refuses the reserved frames and anything once the segment was
 * stopped (a drain), children sharing the segment's writer (a child's scope opens with its
 * first frame: a child that writes nothing leaves no trace), and the driver's reads.
 */
export function runContext(
  reads: RunContextReads,
  meta: RunMeta,
  writer: LucidSinkWriter,
  input: unknown,
  signal: AbortSignal,
  segment: { stopped: boolean },
  scope?: { name: string; parentToolCallId?: string }
): RunContext {
  let opened = !scope
  const open = async () => {
    if (opened) return
    opened = true
    await writer.write({
      t: 'event',
      event: {
        kind: 'subagent-start',
        runId: meta.runId,
        name: scope!.name,
        ...(scope!.parentToolCallId ? { parentToolCallId: scope!.parentToolCallId } : {}),
      },
    })
  }
  return {
    runId: meta.runId,
    streamRunId: meta.streamRunId,
    threadId: meta.threadId,
    parentRunId: meta.parentRunId,
    input,
    signal,
    principal: meta.principal,
    writer: {
      write: async (frame) => {
        // A segment stopped by a drain: its outcome is being written, nothing goes after it.
        if (segment.stopped) throw new StreamClosedError(meta.streamRunId)
        if (isReserved(frame)) {
          throw new InvalidFrameError([{ field: 'event.kind', rule: 'reserved' }])
        }
        await open()
        return writer.write(frame)
      },
      flush: () => writer.flush?.(),
      end: () => writer.flush?.(),
    },
    child: (childRunId, options = {}) => {
      // One writer per stream per segment: parent and children share it, so their text stays
      // in the order it was written; the writer parks each approval under its own run.
      const childMeta: RunMeta = { ...meta, runId: childRunId, parentRunId: meta.runId }
      writer.adopt(childMeta)
      return runContext(reads, childMeta, writer, null, signal, segment, {
        name: options.name ?? 'agent',
        parentToolCallId: options.parentToolCallId,
      })
    },
    history: () => reads.history(writer, meta.streamRunId),
    conversation: () => reads.conversation(meta),
    finish: async (status = 'success') => {
      if (meta.parentRunId === null) return
      await open()
      await writer.write({
        t: 'event',
        event: { kind: 'subagent-finish', runId: meta.runId, status },
      })
    },
  }
}

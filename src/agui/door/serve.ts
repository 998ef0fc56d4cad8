import { compareCursors, formatCursor, parseCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import { FrameTranslator } from '../translate/index.js'
import type { AgUiRun } from './runs.js'
import { replayInto } from './replay.js'
import type { DoorDeps, DoorReply, SseItem } from './reply.js'
import { segmentBounds } from './segment.js'
import { closingEvents } from './transcript.js'

/** One AG-UI run served from `after` (or its start) as a door reply. */
export function serveRun(
  deps: DoorDeps,
  run: AgUiRun,
  after: Cursor | undefined,
  signal?: AbortSignal
): DoorReply {
  return {
    kind: 'stream',
    streamRunId: run.streamRunId,
    events: runEvents(deps, run, after, signal),
  }
}

/**
 * One AG-UI run as events: the stream before its start cursor replayed silently into the
 * translator (so ids, open constructs and state are what they were), `RUN_STARTED` and the join
 * prelude, then the segment's frames until it ends. The SSE `id:` goes on a frame's last event.
 */
export async function* runEvents(
  deps: DoorDeps,
  run: AgUiRun,
  after: Cursor | undefined,
  signal?: AbortSignal
): AsyncGenerator<SseItem> {
  const translator = new FrameTranslator({
    ...deps.options,
    streamRunId: run.streamRunId,
    clientTools: run.clientTools,
  })
  const identity = { threadId: run.threadId, runId: run.runId }
  let start: Cursor = { seq: run.afterSeq }
  if (after && compareCursors(after, start) > 0) start = after
  const { end, parkedAt } = await segmentBounds(deps, run.streamRunId, run.afterSeq)
  if (end !== null && start.seq >= end) {
    // The client had the whole run: it gets its start and its end again, nothing between.
    await replayInto(deps, translator, run.streamRunId, { seq: end - 1 })
    if (translator.failure) {
      yield { event: translator.open(identity)[0] }
      yield { event: translator.failure, id: String(end) }
      return
    }
    for (const event of translator.open(identity)) yield { event }
    const events = await closingEvents(deps, run, translator, identity)
    for (const [i, event] of events.entries())
      yield i === events.length - 1 ? { event, id: String(end) } : { event }
    return
  }
  await replayInto(deps, translator, run.streamRunId, start)
  if (translator.failure) {
    // The client had the run's error: it gets its start and the error again.
    yield { event: translator.open(identity)[0] }
    yield { event: translator.failure, id: formatCursor(start) }
    return
  }
  for (const event of translator.open(identity)) yield { event }
  // A cancelled park is stored whole: served through its end to the cancellation's.
  const items =
    parkedAt === undefined
      ? deps.sink.segments(run.streamRunId, { after: formatCursor(start), signal })
      : deps.sink.replay(run.streamRunId, {
          after: start,
          until: { seq: end! },
          appendedEnds: true,
        })
  for await (const item of items) {
    const closes =
      item.t === 'end' && (parkedAt === undefined || parseCursor(item.cursor).seq >= end!)
    const events =
      item.t !== 'end'
        ? translator.push(item as StreamFrame, parseCursor(item.cursor))
        : closes
          ? await closingEvents(deps, run, translator, identity)
          : translator.endSegment()
    for (const [i, event] of events.entries()) {
      yield i === events.length - 1 ? { event, id: item.cursor } : { event }
    }
    if (closes || translator.terminal === 'failed') return
  }
}

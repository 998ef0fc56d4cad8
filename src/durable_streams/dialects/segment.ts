import { compareCursors, START, type Cursor } from '../../core/cursor.js'
import type { UiMessageDoor } from '../../ui_message/door/index.js'
import type { DurableSource, SourceBatch, SourceHead } from '../source.js'
import { runHead, settledVerdict, type DialectRead, type RunCore } from './run_state.js'
import { turnBatches } from './ui_message.js'

/**
 * One segment of a turn as the useChat door answers a request with it (the AI SDK transport's
 * stream, `src/http/durable_chat_routes.ts`): its UI message chunks from `from` (where the
 * door's answer starts: the turn's start, or the decisions the request gave) to the end of that
 * segment, where the turn finishes (`finish`) whatever follows, as the door's answer finishes
 * at a park nobody answered yet. A segment that starts inside a park (`from` before the end of
 * the park its decisions continue) ends at the next segment end. It closes at that end; it
 * starts at `from` (offset `-1` reads from there).
 */
export function uiSegmentSource(
  door: UiMessageDoor,
  core: RunCore,
  streamRunId: string,
  from: Cursor
): DurableSource {
  const bound = segmentBound(core, streamRunId, from)
  const head = async (): Promise<SourceHead> => {
    const end = await bound()
    if (end !== null) return { tail: { seq: end }, closed: true }
    const run = await runHead(core, streamRunId)
    const tail = run?.tail ?? START
    return { tail: compareCursors(tail, from) < 0 ? from : tail, closed: false }
  }
  return {
    contentType: 'application/json',
    json: true,
    head,
    has: async (cursor) => {
      if (cursor.seq === 0 && cursor.offset === undefined) return true
      return compareCursors(cursor, from) >= 0 && compareCursors(cursor, (await head()).tail) <= 0
    },
    batches: (after, read) => segmentBatches(door, core, streamRunId, from, bound, head, after, read),
  }
}

async function* segmentBatches(
  door: UiMessageDoor,
  core: RunCore,
  streamRunId: string,
  from: Cursor,
  bound: () => Promise<number | null>,
  head: () => Promise<SourceHead>,
  after: Cursor,
  read: DialectRead
): AsyncGenerator<SourceBatch> {
  const until = read.live ? undefined : (await head()).tail
  const settleAt = async (end: number) => {
    const last = await bound()
    if (last !== null && end >= last) return 'finish' as const
    return (await settledVerdict(core, streamRunId, end, read)) !== null
  }
  const reading = turnBatches(door, streamRunId, after, { ...read, until }, settleAt, from)
  let step = await reading.next()
  while (!step.done) {
    yield step.value
    step = await reading.next()
  }
  const end = await bound()
  if (step.value === 'ended' && end !== null) yield { messages: [], next: { seq: end }, closed: true }
}

/**
 * Where the segment from `from` ends, once stored (`null` before): the first segment end after
 * `from` when `from` is a segment's start (the stream's, or right after an end), else the one
 * after it (the park `from` is inside was decided: the turn goes on through its end), or that
 * first one when the run is over there. Kept once known (an end never moves).
 */
function segmentBound(core: RunCore, streamRunId: string, from: Cursor) {
  let known: number | null = null
  const endAfter = (seq: number) => core.sink.segmentEnd(streamRunId, seq)
  return async () => {
    if (known !== null) return known
    const first = await endAfter(from.seq)
    if (first === null) return null
    const atStart =
      from.offset === undefined && (from.seq === 0 || (await endAfter(from.seq - 1)) === from.seq)
    if (atStart) return (known = first)
    const next = await endAfter(first)
    if (next !== null) return (known = next)
    const run = await runHead(core, streamRunId)
    return run?.closed ? (known = first) : null
  }
}

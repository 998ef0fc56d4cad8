import { compareCursors, isStart, START, type Cursor } from '../../core/cursor.js'
import type { UiMessageDoor } from '../../ui_message/door/index.js'
import type { DurableSource, SourceBatch, SourceHead } from '../source.js'
import { readAfterSegmentEnd } from '../../door/index.js'
import { newestEnd, runHead, settledVerdict, type DialectRead, type RunCore } from './run_state.js'
import { turnBatches } from './ui_message.js'

/**
 * One segment of a turn as the useChat door answers a request with it (the AI SDK transport's
 * stream, `src/http/durable_chat_routes.ts`): its UI message chunks from `from` (where the
 * door's answer starts: the turn's start, or the decisions the request gave) to the end of that
 * segment, where the turn finishes (`finish`) whatever follows, as the door's answer finishes
 * at a park nobody answered yet. The segment is the one that ends at the first segment end
 * after seq `after` (`activeSegment`: the one the stream was in when the door answered; the
 * ends before it went on, as the door's answer goes on through them). It closes at its end;
 * it starts at `from` (offset `-1` reads from there).
 */
export function uiSegmentSource(
  door: UiMessageDoor,
  core: RunCore,
  streamRunId: string,
  from: Cursor,
  after: number
): DurableSource {
  const bound = segmentBound(core, streamRunId, after)
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
      if (isStart(cursor)) return true
      const { tail } = await head()
      return compareCursors(cursor, from) >= 0 && compareCursors(cursor, tail) <= 0
    },
    batches: (position, read) =>
      segmentBatches(door, core, streamRunId, from, bound, head, position, read),
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
  // A stream that went away (purged) ends its readers, closed where they are (`run_source.ts`).
  const gone = async () => (await core.sink.head(streamRunId)) === null
  if (await gone()) return yield { messages: [], next: after, closed: true }
  const now = read.live ? null : await head()
  const settleAt = async (end: number) => {
    const last = await bound()
    if (last !== null && end >= last) return 'finish' as const
    return (await settledVerdict(core, streamRunId, end, read)) !== null
  }
  const until = now?.tail
  const reading = turnBatches(door, streamRunId, after, { ...read, until }, settleAt, from)
  let step = await reading.next()
  let last = after
  while (!step.done) {
    yield step.value
    last = step.value.next
    step = await reading.next()
  }
  if (read.signal?.aborted) return
  if (await gone()) return yield { messages: [], next: last, closed: true }
  // A read that does not wait read to the tail as it was: it closes only a segment that had
  // ended then (one that ended since has more for the next read).
  if (step.value !== 'ended' || (now && !now.closed)) return
  const end = await bound()
  if (end !== null) yield { messages: [], next: { seq: end }, closed: true }
}

/**
 * Where the segment ends: at the first segment end after seq `after`, once stored (`null`
 * before). Kept once known (an end never moves).
 */
function segmentBound(core: RunCore, streamRunId: string, after: number) {
  let known: number | null = null
  return async () => {
    if (known === null) known = await core.sink.segmentEnd(streamRunId, after)
    return known
  }
}

/**
 * The segment a stream is in now, as the seq its end follows (`uiSegmentSource`'s `after`):
 * after its newest segment end when the stream goes on from there (the kernel's verdict: it
 * talks, or its park was decided), else before that end (the park nobody answered yet, or the
 * run's last end). 0 before any end.
 */
export async function activeSegment(core: RunCore, streamRunId: string): Promise<number> {
  const end = await newestEnd(core.sink, streamRunId)
  if (end === null) return 0
  const { verdict } = await readAfterSegmentEnd(core, streamRunId, end)
  return verdict === 'goes-on' ? end : end - 1
}

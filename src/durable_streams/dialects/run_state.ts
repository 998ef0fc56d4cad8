import { compareCursors, isStart, START, type Cursor } from '../../core/cursor.js'
import { readAfterSegmentEnd, type SegmentEndVerdict } from '../../door/index.js'
import type { Parking } from '../../parking/parking.js'
import type { LucidTokenStreamSink } from '../../sink/lucid_sink.js'
import { positionOf } from '../../sink/read_path.js'
import type { SourceHead } from '../source.js'

/**
 * Where a run's stream stands as a Durable Stream, in every dialect alike (the kernel's one
 * verdict on what follows a segment end, `door/verdict.ts`, decides it):
 *
 * - closed once the stream is no longer open and its newest segment end is `over` (finished,
 *   failed) or `cancelled`: its final position is after its last row;
 * - parked on items nobody answered yet (`waits`): open, and what a dialect shows at the park's
 *   end depends on the answer (the useChat door finishes the turn there or goes on, the AG-UI
 *   door ends the run with an interrupt or with its cancellation), so the stream's tail is the
 *   position before that end until someone decides: a reader waits there across the park;
 * - else open, its tail after everything stored.
 */

/** What a run's Durable Stream reads: the sink and parking (the verdict's snapshot). */
export interface RunCore {
  sink: LucidTokenStreamSink
  parking: { queries: Pick<Parking['queries'], 'streamAfter'> }
}

/** How a Durable Streams read goes: live (it waits for what follows) or not, until `signal`. */
export interface DialectRead {
  live: boolean
  signal?: AbortSignal
}

/** The head of a run's Durable Stream (see above); `null` when the stream does not exist. */
export async function runHead(core: RunCore, streamRunId: string): Promise<SourceHead | null> {
  const row = await core.sink.head(streamRunId)
  if (!row) return null
  if (row.status === 'open') {
    return { tail: (await core.sink.storedHead(streamRunId)) ?? START, closed: false }
  }
  const { verdict } = await readAfterSegmentEnd(core, streamRunId)
  if (verdict === 'over' || verdict === 'cancelled') {
    return { tail: { seq: row.lastSeq }, closed: true }
  }
  if (verdict === 'waits') {
    const end = await newestEnd(core.sink, streamRunId)
    if (end !== null) return { tail: { seq: end - 1 }, closed: false }
  }
  return { tail: { seq: row.lastSeq }, closed: false }
}

/** Whether `cursor` is a position of the run's Durable Stream now: at or before its tail. */
export async function runHas(core: RunCore, streamRunId: string, cursor: Cursor) {
  const head = await runHead(core, streamRunId)
  if (!head) return isStart(cursor)
  return compareCursors(cursor, head.tail) <= 0
}

/** The newest segment end of a stream (a park's, when it is parked), or `null`. */
export async function newestEnd(sink: LucidTokenStreamSink, streamRunId: string) {
  let end = await sink.segmentEnd(streamRunId, 0)
  while (end !== null) {
    const next = await sink.segmentEnd(streamRunId, end)
    if (next === null) return end
    end = next
  }
  return end
}

/**
 * The verdict on the segment end at `end` once nobody is waited for: a live read waits across
 * the park (woken by what is appended to the stream: a decision's frames, the resume, the
 * cancellation) until it goes on, is cancelled or is over; `null` for a read that does not wait
 * (or whose signal aborted) while the park waits.
 */
export async function settledVerdict(
  core: RunCore,
  streamRunId: string,
  end: number,
  read: DialectRead
): Promise<Exclude<SegmentEndVerdict, 'waits'> | null> {
  let after: Cursor | null = { seq: end }
  while (true) {
    const { verdict } = await readAfterSegmentEnd(core, streamRunId, end)
    if (verdict !== 'waits') return verdict
    if (!read.live || read.signal?.aborted) return null
    after = await nextChange(core.sink, streamRunId, after, read.signal)
    if (after === null) return null
  }
}

/**
 * The final position of a run's Durable Stream once it is closed; a live read waits for it
 * (woken by what the stream stores), `null` for a read that does not wait (or aborted).
 */
export async function finalPosition(
  core: RunCore,
  streamRunId: string,
  read: DialectRead
): Promise<Cursor | null> {
  while (true) {
    const head = await runHead(core, streamRunId)
    if (!head) return null
    if (head.closed) return head.tail
    if (!read.live || read.signal?.aborted) return null
    const row = await core.sink.head(streamRunId)
    const seen = await nextChange(core.sink, streamRunId, { seq: row?.lastSeq ?? 0 }, read.signal)
    if (seen === null) return null
  }
}

/**
 * The position after the next thing stored in the stream after `after` (the sink's one live
 * read, stopped at its first item), `null` when the stream is gone or `signal` aborted.
 */
async function nextChange(
  sink: LucidTokenStreamSink,
  streamRunId: string,
  after: Cursor,
  signal?: AbortSignal
): Promise<Cursor | null> {
  const controller = new AbortController()
  const abort = () => controller.abort()
  signal?.addEventListener('abort', abort, { once: true })
  try {
    for await (const item of sink.segments(streamRunId, { after, signal: controller.signal })) {
      return positionOf(item)
    }
    return null
  } finally {
    signal?.removeEventListener('abort', abort)
    controller.abort()
  }
}

import { parseCursor } from '../../core/cursor.js'
import type { DoorDeps } from './reply.js'
import type { SegmentBounds, StreamState } from './facts.js'

export type { SegmentBounds } from './facts.js'

/**
 * The bounds of the AG-UI run that reads `streamRunId` after `afterSeq`. A park that was
 * cancelled never continues: the cancellation (each pending call's `tool-output-denied` and the
 * `cancelled` event, appended after the segment's end) is the end of that same run, so every
 * route shows `RUN_FINISHED { outcome: cancelled }` and no open interrupt.
 *
 * `stream` is the stream's row as just read (else it is read here); `null`: the stream does not
 * exist. With the replica's facts (`deps.facts`), a segment's end is read once and bounds are
 * computed once per stream revision (`facts.ts`).
 */
export async function segmentBounds(
  deps: Pick<DoorDeps, 'sink' | 'parking' | 'facts'>,
  streamRunId: string,
  afterSeq: number,
  stream?: StreamState | null
): Promise<SegmentBounds> {
  if (stream === undefined) stream = await deps.sink.head(streamRunId)
  if (!stream) return { end: await deps.sink.segmentEnd(streamRunId, afterSeq) }
  const facts = deps.facts
  const known = facts?.bounds(streamRunId, stream, afterSeq)
  if (known) return known
  const bounds = await compute(deps, streamRunId, afterSeq, stream)
  facts?.keepBounds(streamRunId, stream, afterSeq, bounds)
  return bounds
}

async function compute(
  deps: Pick<DoorDeps, 'sink' | 'parking' | 'facts'>,
  streamRunId: string,
  afterSeq: number,
  stream: StreamState
): Promise<SegmentBounds> {
  const end = await endAfter(deps, streamRunId, stream, afterSeq)
  if (end === null) return { end }
  // Reopened after this end (as of the row read): it goes on, the usual end.
  if (stream.status === 'open' && end <= stream.lastSeq) return { end }
  // Else whether the park at `end` was cancelled, in one snapshot (`streamAfter`): the stream
  // reopened or a later end, or the newest suspension cancelled, read apart, could mix the
  // states before and after a whole continuation (and take a later park's cancel for this one).
  const after = await deps.parking.queries.streamAfter(streamRunId, end)
  if (!after || after.stream.status === 'open' || after.nextEnd !== null) return { end }
  if (after.suspension !== 'cancelled') return { end }
  // Only appended frames follow the park (decisions, then the cancel): read them to its end.
  let cancelled = false
  for await (const item of deps.sink.replay(streamRunId, {
    after: { seq: end },
    appendedEnds: true,
  })) {
    if (item.t === 'event' && item.event.kind === 'cancelled') cancelled = true
    else if (item.t === 'end' && cancelled) {
      return { end: parseCursor(item.cursor).seq, parkedAt: end }
    }
  }
  return { end }
}

/** The first segment end after `afterSeq` (kept once found: it never moves), or `null`. */
async function endAfter(
  deps: Pick<DoorDeps, 'sink' | 'facts'>,
  streamRunId: string,
  stream: StreamState,
  afterSeq: number
) {
  const known = deps.facts?.segmentEnd(streamRunId, stream, afterSeq)
  if (known !== undefined) return known
  const end = await deps.sink.segmentEnd(streamRunId, afterSeq)
  if (end !== null) deps.facts?.keepSegmentEnd(streamRunId, stream, afterSeq, end)
  return end
}

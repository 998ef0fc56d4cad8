import { readAfterSegmentEnd } from '../../door/index.js'
import { positionOf } from '../../sink/read_path.js'
import type { AgUiDeps } from './reply.js'
import type { SegmentBounds, StreamState } from './segment_cache.js'

export type { SegmentBounds } from './segment_cache.js'

/**
 * The bounds of the AG-UI run that reads `streamRunId` after `afterSeq`. A park that was
 * cancelled never continues: the cancellation (each pending call's `tool-output-denied` and the
 * `cancelled` event, appended after the segment's end) is the end of that same run, so every
 * route shows `RUN_FINISHED { outcome: cancelled }` and no open interrupt.
 *
 * `stream` is the stream's row as just read (else it is read here); `null`: the stream does not
 * exist. With the replica's segment cache (`deps.segments`), a segment's end is read once and
 * bounds are computed once per stream revision (`segment_cache.ts`).
 */
export async function segmentBounds(
  deps: Pick<AgUiDeps, 'sink' | 'parking' | 'segments'>,
  streamRunId: string,
  afterSeq: number,
  stream?: StreamState | null
): Promise<SegmentBounds> {
  if (stream === undefined) stream = await deps.sink.head(streamRunId)
  if (!stream) return { end: await deps.sink.segmentEnd(streamRunId, afterSeq) }
  // Nothing stored after `afterSeq` as of the row (a run just started): no end yet, none read.
  if (stream.lastSeq <= afterSeq) return { end: null }
  const cache = deps.segments
  const known = cache?.bounds(streamRunId, stream, afterSeq)
  if (known) return known
  const bounds = await compute(deps, streamRunId, afterSeq, stream)
  cache?.keepBounds(streamRunId, stream, afterSeq, bounds)
  return bounds
}

async function compute(
  deps: Pick<AgUiDeps, 'sink' | 'parking' | 'segments'>,
  streamRunId: string,
  afterSeq: number,
  stream: StreamState
): Promise<SegmentBounds> {
  const end = await endAfter(deps, streamRunId, stream, afterSeq)
  if (end === null) return { end }
  // Reopened after this end (as of the row read): it goes on, the usual end.
  if (stream.status === 'open' && end <= stream.lastSeq) return { end }
  // Else whether the park at `end` was cancelled, in one snapshot (the kernel's verdict): the
  // stream reopened or a later end, or the newest suspension cancelled, read apart, could mix
  // the states before and after a whole continuation (and take a later park's cancel for this).
  const { verdict } = await readAfterSegmentEnd(deps, streamRunId, end)
  if (verdict !== 'cancelled') return { end }
  // Only appended frames follow the park (decisions, then the cancel): read them to its end.
  let cancelled = false
  for await (const item of deps.sink.replay(streamRunId, {
    after: { seq: end },
    appendedEnds: true,
  })) {
    if (item.t === 'event' && item.event.kind === 'cancelled') cancelled = true
    else if (item.t === 'end' && cancelled) {
      return { end: positionOf(item).seq, parkedAt: end }
    }
  }
  return { end }
}

/** The first segment end after `afterSeq` (kept once found: it never moves), or `null`. */
async function endAfter(
  deps: Pick<AgUiDeps, 'sink' | 'segments'>,
  streamRunId: string,
  stream: StreamState,
  afterSeq: number
) {
  const known = deps.segments?.segmentEnd(streamRunId, stream, afterSeq)
  if (known !== undefined) return known
  const end = await deps.sink.segmentEnd(streamRunId, afterSeq)
  if (end !== null) deps.segments?.keepSegmentEnd(streamRunId, stream, afterSeq, end)
  return end
}

import { parseCursor } from '../../core/cursor.js'
import type { DoorDeps } from './reply.js'

/** Where an AG-UI run's segment ends, as the door serves it. */
export interface SegmentBounds {
  /**
   * The seq of the end marker that ends the AG-UI run: the segment's own end, or, when its park
   * was cancelled, the end marker after the cancellation's frames. `null` while it is written.
   */
  end: number | null
  /**
   * Set when the park was cancelled: the segment's own end marker (where it parked). The run is
   * served through it, on to the cancellation, instead of ending on an interrupt nobody can
   * answer any more.
   */
  parkedAt?: number
}

/**
 * The bounds of the AG-UI run that reads `streamRunId` after `afterSeq`. A park that was
 * cancelled never continues: the cancellation (each pending call's `tool-output-denied` and the
 * `cancelled` event, appended after the segment's end) is the end of that same run, so every
 * route shows `RUN_FINISHED { outcome: cancelled }` and no open interrupt.
 */
export async function segmentBounds(
  deps: Pick<DoorDeps, 'sink' | 'parking'>,
  streamRunId: string,
  afterSeq: number
): Promise<SegmentBounds> {
  const end = await deps.sink.segmentEnd(streamRunId, afterSeq)
  if (end === null) return { end }
  // Went on (a later segment, or reopened), or its park was not cancelled: the usual end.
  if ((await deps.sink.segmentEnd(streamRunId, end)) !== null) return { end }
  const head = await deps.sink.head(streamRunId)
  if (!head || head.status === 'open') return { end }
  const newest = await deps.parking.newestInStream(streamRunId)
  if (newest?.status !== 'cancelled') return { end }
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

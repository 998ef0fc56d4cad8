import type { Parking } from '../parking/parking.js'

/**
 * A stream as parking's queries read it after a segment end, in one snapshot
 * (`ParkingQueries.streamAfter`): its row's status, the next segment end after the one asked
 * about, its newest suspension's status and how many items it waits for.
 */
export interface StreamAfterEnd {
  stream: { status: string }
  nextEnd: number | null
  suspension: string | null
  pending: number
}

/**
 * What follows a segment end:
 * - `goes-on`: the stream went on (reopened, or ended again later), or is about to (its park
 *   was claimed by a replica resuming it, or decided and waiting for a claim: nothing is
 *   pending and it was not cancelled): a reader waits for the continuation;
 * - `waits`: parked on items nobody answered yet;
 * - `cancelled`: the park was cancelled; the stream never continues;
 * - `over`: anything else (finished, failed, no such stream).
 */
export type SegmentEndVerdict = 'goes-on' | 'waits' | 'cancelled' | 'over'

/**
 * The one verdict on what follows a segment end, from the stream as read in one snapshot
 * ({@link StreamAfterEnd}; `null`: no such stream). Read apart, a resume (it reopens the stream
 * and marks its suspension resumed) could be seen half done: the stream from before (still
 * ended), the suspension from after (resumed).
 */
export function afterSegmentEnd(after: StreamAfterEnd | null): SegmentEndVerdict {
  if (!after) return 'over'
  if (after.stream.status === 'open' || after.nextEnd !== null) return 'goes-on'
  if (after.suspension === 'claimed') return 'goes-on'
  if (after.suspension === 'parked') return after.pending === 0 ? 'goes-on' : 'waits'
  return after.suspension === 'cancelled' ? 'cancelled' : 'over'
}

/**
 * {@link afterSegmentEnd} of the stream as it is now, after the segment end at `end` (without
 * `end`: after its newest one), with the stream's row as read in the same snapshot.
 */
export async function readAfterSegmentEnd(
  deps: { parking: { queries: Pick<Parking['queries'], 'streamAfter'> } },
  streamRunId: string,
  end?: number
) {
  const after = await deps.parking.queries.streamAfter(streamRunId, end)
  return { verdict: afterSegmentEnd(after), after }
}

/** Whether the stream goes on after the segment that ended at `end` (`goes-on`). */
export async function streamGoesOn(
  deps: { parking: { queries: Pick<Parking['queries'], 'streamAfter'> } },
  streamRunId: string,
  end: number
) {
  const { verdict } = await readAfterSegmentEnd(deps, streamRunId, end)
  return verdict === 'goes-on'
}

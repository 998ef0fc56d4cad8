import type { ParkingService } from '../parking/service.js'
import type { PendingItem } from '../parking/types.js'

/**
 * Every item a stream waits for (approvals and question sets, all of them, never a page): what
 * a door checks before a new input (a thread waiting for answers takes none) and what a resume
 * must answer.
 */
export function openItems(
  deps: { parking: Pick<ParkingService, 'pendingOf'> },
  streamRunId: string
): Promise<PendingItem[]> {
  return deps.parking.pendingOf(streamRunId)
}

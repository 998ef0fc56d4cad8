import type { Principal } from '../core/run.js'
import type { ParkingService } from '../parking/service.js'
import type { PendingItem } from '../parking/types.js'

/**
 * What every door asks of the parking service to decide: a stream's open items, and the
 * decisions a person gives through a door (`via: 'chat'`). The parking service enforces its
 * rules (decide once, lapsed, approver).
 */

type Parking = Pick<ParkingService, 'pendingOf' | 'approve' | 'reject' | 'answer' | 'expire'>

/**
 * Every item a stream waits for (approvals and question sets, all of them, never a page): what
 * a door checks before a new input (a thread waiting for answers takes none) and what a resume
 * must answer.
 */
export function openItems(
  deps: { parking: Pick<Parking, 'pendingOf'> },
  streamRunId: string
): Promise<PendingItem[]> {
  return deps.parking.pendingOf(streamRunId)
}

/** Where a parked item is: its run, its id, the park it belongs to. */
export interface ParkedRef {
  runId: string
  itemId: string
  park: number
}

/**
 * A decision a person gives through a door: approve or reject an approval, answer a question
 * set (the body as the parking service takes it, with the item's `park`), or settle a lapsed item
 * as expired (as the sweeper would).
 */
export type DoorDecision =
  { verb: 'approve' | 'reject' | 'answer'; body: Record<string, unknown> } | { verb: 'expire' }

/** Apply `decision` to the parked item `ref` as `principal`, through a door (`via: 'chat'`). */
export function applyDecision(
  deps: { parking: Parking },
  ref: ParkedRef,
  principal: Principal | null,
  decision: DoorDecision
): Promise<unknown> {
  const { parking } = deps
  if (decision.verb === 'expire') return parking.expire(ref.runId, ref.itemId, ref.park)
  const decider = { principal, via: 'chat' }
  const body = { ...decision.body, park: ref.park }
  if (decision.verb === 'approve') return parking.approve(ref.runId, ref.itemId, decider, body)
  if (decision.verb === 'reject') return parking.reject(ref.runId, ref.itemId, decider, body)
  return parking.answer(ref.runId, ref.itemId, decider, body)
}

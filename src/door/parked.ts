import type { Principal } from '../core/run.js'
import type { Parking } from '../parking/parking.js'
import type { ParkedItem } from '../parking/types.js'

/**
 * What every door asks of parking to decide: a stream's open items, and the decisions a person
 * gives through a door (`via: 'chat'`). Parking's decisions enforce their rules (decide once,
 * lapsed, approver).
 */

/** The parts of parking a door decides through. */
interface DoorParking {
  queries: Pick<Parking['queries'], 'pendingOf'>
  decisions: Pick<Parking['decisions'], 'approve' | 'reject' | 'answer' | 'expire'>
}

/**
 * Every item a stream waits for (approvals and question sets, all of them, never a page): what
 * a door checks before a new input (a thread waiting for answers takes none) and what a resume
 * must answer.
 */
export function openItems(
  deps: { parking: Pick<DoorParking, 'queries'> },
  streamRunId: string
): Promise<ParkedItem[]> {
  return deps.parking.queries.pendingOf(streamRunId)
}

/** Where a parked item is: its run, its id, the park it belongs to. */
export interface ParkedRef {
  runId: string
  itemId: string
  park: number
}

/**
 * A decision a person gives through a door: approve or reject an approval, answer a question
 * set (the body as parking's decisions take it; the item's `park` is added), or settle a lapsed
 * item as expired (as the sweeper would).
 */
export type DoorDecision =
  { verb: 'approve' | 'reject' | 'answer'; body: Record<string, unknown> } | { verb: 'expire' }

/** Apply `decision` to the parked item `ref` as `principal`, through a door (`via: 'chat'`). */
export function applyDecision(
  deps: { parking: DoorParking },
  ref: ParkedRef,
  principal: Principal | null,
  decision: DoorDecision
): Promise<unknown> {
  const { decisions } = deps.parking
  if (decision.verb === 'expire') return decisions.expire(ref.runId, ref.itemId, ref.park)
  const decider = { principal, via: 'chat' }
  const body = { ...decision.body, park: ref.park }
  if (decision.verb === 'approve') return decisions.approve(ref.runId, ref.itemId, decider, body)
  if (decision.verb === 'reject') return decisions.reject(ref.runId, ref.itemId, decider, body)
  return decisions.answer(ref.runId, ref.itemId, decider, body)
}

import type { Principal } from '../core/run.js'
import type { AgentState } from '../core/agent_state.js'
import type { DecisionPlan, ItemDecision } from '../parking/index.js'
import type { Parking } from '../parking/parking.js'
import type { ParkedItem } from '../parking/types.js'

/**
 * What every door asks of parking to decide: a stream's open items, and the decisions a person
 * gives through a door (`via: 'chat'`), a request's whole batch at once. Parking's decisions
 * enforce their rules (decide once, lapsed, approver, the edited input's schema) for every
 * decision of the batch before any is applied, and apply them in one transaction.
 */

/** The parts of parking a door decides through. */
interface DoorParking {
  queries: Pick<Parking['queries'], 'pendingOf'>
  decisions: Pick<Parking['decisions'], 'plan' | 'decideAll'>
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
 * set (the body as parking's decisions take it), or settle a lapsed item as expired (as the
 * sweeper would).
 */
export type DoorDecision =
  { verb: 'approve' | 'reject' | 'answer'; body: Record<string, unknown> } | { verb: 'expire' }

/** A door's decision on the parked item `ref`, as parking's batch takes it. */
export function itemDecision(ref: ParkedRef, decision: DoorDecision): ItemDecision {
  const { runId, itemId, park } = ref
  if (decision.verb === 'expire') return { runId, itemId, park, verb: 'expire' }
  return { runId, itemId, park, verb: decision.verb, body: decision.body }
}

/**
 * Check a request's whole batch of decisions as `principal`, through a door (`via: 'chat'`):
 * nothing is written; the plan's `commit()` applies them all in one transaction, or none, with
 * `pageState` (the page's state the request carried, checked) as the resumed segment's
 * `ctx.input.state`.
 * @throws parking's decision errors (the batch is refused whole)
 */
export function planBatch(
  deps: { parking: DoorParking },
  decisions: ItemDecision[],
  principal: Principal | null,
  pageState?: AgentState
): Promise<DecisionPlan> {
  return deps.parking.decisions.plan(decisions, { principal, via: 'chat' }, { pageState })
}

/**
 * Apply a request's whole batch of decisions as `principal`, through a door (`via: 'chat'`):
 * every one checked first, then all applied in one transaction, or none. An item someone
 * settled first (the admin page, another tab, its expiry) is left out, not refused: its outcome
 * is in the stream, where the continuation the door serves shows it. `pageState`: as for
 * {@link planBatch}.
 * @throws parking's decision errors (the batch is refused whole: nothing applied)
 */
export function applyDecisions(
  deps: { parking: DoorParking },
  decisions: ItemDecision[],
  principal: Principal | null,
  pageState?: AgentState
): Promise<{ applied: number }> {
  return deps.parking.decisions.decideAll(
    decisions,
    { principal, via: 'chat' },
    { settledFirst: 'skip', pageState }
  )
}

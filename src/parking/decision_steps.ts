import {
  DecisionConflictError,
  DecisionMismatchError,
  InvalidDecisionError,
  ParkedItemNotFoundError,
} from '../errors.js'
import { schemaIssue } from '../core/json_schema.js'
import type { Principal } from '../core/run.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { askedInputSchema } from './asked_schema.js'
import type { ItemRow } from './store_rows.js'
import type { ParkingQueries } from './queries.js'
import type { SettlementOutcome } from './settlement_frames.js'
import {
  normalizeReply,
  validateAnswer,
  validateDecision,
  validateReply,
  type AnswerBody,
} from './replies.js'
import { refusal, type Decider } from './policy.js'

/** Who settles an item that lapsed. */
export const EXPIRY: Decider = { principal: null, via: 'expiry' }

/**
 * One decision of a request: approve, reject or answer an item (`body` as {@link
 * ParkingDecisions.approve} and the others take it), or settle a lapsed one as expired.
 * `park` pins one park of the run's item id (a door always knows it).
 */
export interface ItemDecision {
  runId: string
  itemId: string
  park?: number
  verb: 'approve' | 'reject' | 'answer' | 'expire'
  body?: unknown
}

/** A decision checked against its item, ready to apply. */
export interface Step {
  item: ItemRow
  decider: Decider
  outcome: SettlementOutcome & { editedInput?: unknown }
}

/** The body of one decision, its shape checked (no lookup yet). */
export type Shape = AnswerBody & { reason?: string; input?: unknown }

/** What checking a decision against its item reads: the item, its tool's schema, the policy. */
export interface StepDeps {
  /** The approval frame declaring the tool's input schema is read through it. */
  sink: LucidTokenStreamSink
  queries: ParkingQueries
  /** Whether `principal` may decide `item` (`ParkingDecisions.mayDecide`). */
  mayDecide: (
    principal: Principal | null,
    item: Pick<ItemRow, 'approver' | 'principal' | 'kind' | 'runId'>
  ) => Promise<boolean>
}

/** A decision's body, its shape checked before anything is looked up. */
export async function shapeOf(decision: ItemDecision): Promise<Shape> {
  if (decision.verb === 'expire') return {}
  if (decision.verb === 'answer') return validateAnswer(decision.body)
  const shape = await validateDecision(decision.body ?? {})
  if (decision.verb === 'reject' && shape.input !== undefined) {
    throw new DecisionMismatchError('a decision')
  }
  return shape
}

/** One decision checked against its item: the step that applies it. */
export async function checkStep(
  deps: StepDeps,
  decision: ItemDecision,
  shape: Shape,
  decider: Decider
): Promise<Step> {
  const park = decision.park ?? shape.park
  if (decision.verb === 'expire') {
    const [item] = await pinnedItems(deps.queries, decision.runId, decision.itemId, park)
    return { item, decider: EXPIRY, outcome: { status: 'expired' } }
  }
  const item = await decidableItem(deps, decision.runId, decision.itemId, decider, park)
  if (decision.verb === 'answer') {
    if (item.kind !== 'elicitation') throw new DecisionMismatchError('a decision')
    const reply = normalizeReply(shape, item.request!)
    return { item, decider, outcome: { status: 'answered', reply } }
  }
  const reason = shape.reason
  if (item.kind === 'elicitation') {
    // The admin inbox is one inbox: approving a question set confirms its defaults, rejecting
    // it skips it.
    if (decider.via !== 'admin') throw new DecisionMismatchError('answers')
    const reply =
      decision.verb === 'approve'
        ? await validateReply({}, item.request!)
        : { answers: {}, skipped: true }
    return { item, decider, outcome: { status: 'answered', reason, reply } }
  }
  if (decision.verb === 'reject') return { item, decider, outcome: { status: 'rejected', reason } }
  if (shape.input !== undefined) {
    // What reaches the tool is what its schema allows, whoever edited it (invariant 13).
    const issue = schemaIssue(await askedInputSchema(deps.sink, item), shape.input, 'input')
    if (issue) throw new InvalidDecisionError([issue])
  }
  return { item, decider, outcome: { status: 'approved', reason, editedInput: shape.input } }
}

/** The item a decision addresses, if the decider may decide it. See {@link pinnedItems}. */
async function decidableItem(
  deps: StepDeps,
  runId: string,
  itemId: string,
  decider: Decider,
  park?: number
): Promise<ItemRow> {
  const rows = await pinnedItems(deps.queries, runId, itemId, park, false)
  if (!(await deps.mayDecide(decider.principal, rows[0]))) {
    throw refusal(decider, rows[0].principal)
  }
  if (rows.length > 1) throw new DecisionConflictError('ambiguous')
  return rows[0]
}

/**
 * The rows a decision on `itemId` of `runId` may mean: the one at `park` when it names one;
 * else every park that used the id. A provider that numbers its calls per response reuses an
 * id in every park: a decision that does not name its park is then ambiguous (a replay of an
 * old one would decide the newest call), a conflict. With `unique` (default), that conflict is
 * thrown here; the rows are never empty.
 * @throws ParkedItemNotFoundError, DecisionConflictError
 */
export async function pinnedItems(
  queries: ParkingQueries,
  runId: string,
  itemId: string,
  park?: number,
  unique = true
) {
  const rows =
    park === undefined
      ? await queries.findItems(runId, itemId)
      : [await queries.findItem(runId, itemId, park)].filter((row) => row !== null)
  if (rows.length === 0) throw new ParkedItemNotFoundError()
  if (unique && rows.length > 1) throw new DecisionConflictError('ambiguous')
  return rows
}

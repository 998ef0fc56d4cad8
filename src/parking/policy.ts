import { DecisionForbiddenError, ParkedItemNotFoundError } from '../errors.js'
import type { Principal } from '../core/run.js'
import type { ApproverPolicy } from './types.js'
import { nowMs } from '../store/sql.js'

/**
 * Who decides, and what a refused decider is told: the package's default approver policy, the
 * rule that an item past its expiry is decided by nobody, and the one rule that picks 403 or 404
 * for a refusal (every decide route goes through them).
 */

/**
 * Whether an item's time ran out at `at` (epoch milliseconds; now in the database's time by default): past its
 * `expiresAt`, nobody may decide it and the sweeper settles it as expired. Parking's
 * decisions and the console's forms ask this; the store's SQL reads (`lapsed`, `settle`) state
 * the same comparison in SQL.
 */
export function lapsed(item: { expiresAt: number | null }, at: number = nowMs()): boolean {
  return item.expiresAt !== null && item.expiresAt < at
}

/**
 * The default approver policy (config `approverPolicy` when none is given):
 * - an item whose `approver` is `'requester'` is decided by the person the run is for (the same
 *   principal id as the run's), and by nobody else;
 * - any other `approver` is a role: a principal whose `roles` hold it decides.
 *
 * Nobody (a `null` principal) decides nothing. An admin of the console is no exception: the
 * `admin` hook lets someone see every item, not decide it. Compose it to widen or narrow who
 * decides, e.g. let holders of an `admin` role decide every item:
 *
 * ```ts
 * approverPolicy: (principal, item) =>
 *   defaultApproverPolicy(principal, item) || (principal?.roles?.includes('admin') ?? false)
 * ```
 */
export const defaultApproverPolicy: ApproverPolicy = (principal, item) => {
  if (!principal) return false
  if (item.approver === 'requester')
    return item.requester !== null && principal.id === item.requester.id
  return principal.roles?.includes(item.approver) ?? false
}

export interface Decider {
  principal: Principal | null
  /** Where the decision came from, recorded with it (`chat`, `admin`, `api`, ...). */
  via?: string
  /**
   * The request passed the app's `admin` hook: its caller sees every item (the console shows
   * them), so a refusal is 403 for them, never 404. It lets nobody decide: the policy does.
   */
  admin?: boolean
}

/**
 * Whether `decider` may see an item of a run that is `requester`'s: the run is theirs (the read
 * routes' rule: the same principal id, or both nobody), or the request passed the `admin` hook.
 */
export function seesItem(decider: Decider, requester: Principal | null): boolean {
  return decider.admin === true || (requester?.id ?? null) === (decider.principal?.id ?? null)
}

/**
 * The error for a decider the policy refused: 403 `DecisionForbiddenError` to one who may see
 * the item (their own run, or an admin), else the same 404 as a missing item, so that deciding
 * cannot tell anyone whether another person's item exists.
 */
export function refusal(decider: Decider, requester: Principal | null) {
  return seesItem(decider, requester) ? new DecisionForbiddenError() : new ParkedItemNotFoundError()
}

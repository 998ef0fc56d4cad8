import type { Principal } from '../../core/run.js'
import type { Parking } from '../../parking/parking.js'
import { defaultApproverPolicy, lapsed } from '../../parking/policy.js'
import type { ParkedItem } from '../../parking/types.js'
import type { PrincipalNames } from './names.js'
import { t } from './layout.js'

/**
 * Whether the console's viewer may decide an item, asked of the same approver policy a decision
 * goes through (never restated here), and, when not, a short why (HTML, every value escaped): a
 * view shows a decision form, and its keys, only to someone whose decision would be taken.
 */
export type Deciding = { may: true } | { may: false; why: string }

/**
 * Whether `principal` may decide `item` at `now`: not past its expiry (the decisions'
 * `lapsed`) and the policy lets them, both read on the stored row, with its principal.
 */
export async function deciding(
  parking: Parking,
  principal: Principal | null,
  item: ParkedItem,
  names: PrincipalNames,
  now: number
): Promise<Deciding> {
  const stored = await parking.queries.findItem(item.runId, item.itemId, item.park)
  // The decisions' own rule, on the stored row a decision would be checked against.
  if (stored && lapsed(stored, now)) {
    return {
      may: false,
      why: 'Its time ran out: nobody may decide it now (the sweeper settles it as expired).',
    }
  }
  if (stored && (await parking.decisions.mayDecide(principal, stored))) return { may: true }
  if (!principal) {
    return {
      may: false,
      why: 'You are signed in as nobody (config <code>principal</code> gave no principal for this request): nobody decides as nobody.',
    }
  }
  const you = `You are ${names.html(principal.id)}${principal.roles?.length ? `, with the roles ${principal.roles.map((role) => `<code>${t(role)}</code>`).join(', ')}` : ', with no role'}.`
  if (parking.decisions.policy !== defaultApproverPolicy) {
    return {
      may: false,
      why: `The approver policy (config <code>approverPolicy</code>) does not let you decide it. ${you}`,
    }
  }
  const who =
    item.approver === 'requester'
      ? `Only the person the run is for${item.requesterId ? ` (${names.html(item.requesterId)})` : ''} may decide it`
      : `Only a principal with the role <code>${t(item.approver)}</code> may decide it`
  return {
    may: false,
    why: `${who}. ${you} To let others decide, set <code>approverPolicy</code> in config/agent_stream.ts.`,
  }
}

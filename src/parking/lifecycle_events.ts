import type { LifecycleEvent, LifecycleItem } from '../core/lifecycle.js'
import type { ItemRow } from './store_rows.js'
import type { Decider } from './policy.js'

/** An item row as a lifecycle event names it: ids, tool, approver, expiry (nothing it asked). */
export function lifecycleItem(item: ItemRow): LifecycleItem {
  return {
    itemId: item.itemId,
    kind: item.kind,
    ...(item.toolName !== undefined ? { toolName: item.toolName } : {}),
    approver: item.approver,
    expiresAt: item.expiresAt,
  }
}

/**
 * The event a settled item is: `run.expired` when it lapsed (the sweeper, via `expiry`), else
 * `run.decided` with the decision, how it came (`via`) and the decider's id.
 */
export function decisionEvent(item: ItemRow, decider: Decider, status: string): LifecycleEvent {
  return {
    type: status === 'expired' ? 'run.expired' : 'run.decided',
    data: {
      runId: item.runId,
      streamRunId: item.streamRunId,
      threadId: item.threadId,
      park: item.park,
      items: [lifecycleItem(item)],
      decision: status,
      via: decider.via ?? 'api',
      decidedBy: decider.principal?.id ?? null,
    },
  }
}

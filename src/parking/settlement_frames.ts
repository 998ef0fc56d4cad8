import type { StreamFrame } from '../core/frames.js'
import type { Principal } from '../core/run.js'
import type { ItemRow } from './store_rows.js'
import type { ParkedItem } from './types.js'

/** How an item is settled, as {@link settlementFrames} writes it. */
export interface SettlementOutcome {
  status: 'approved' | 'rejected' | 'answered' | 'expired'
  reason?: string
  reply?: { answers: Record<string, string[]>; skipped: boolean }
}

/** `tool-output-denied` for a call its run's cancel stopped (`status: 'cancelled'`). */
export function cancelledCall(id: string): StreamFrame {
  return {
    t: 'event',
    event: { kind: 'tool-output-denied', id, reason: 'cancelled', status: 'cancelled' },
  }
}

/**
 * The frames a settlement writes into its stream, in the decision's transaction. PURE.
 * - approval: `approval-settled` (status, approver, who decided and how, reason); a rejection or
 *   an expiry also `tool-output-denied` with its `status` (each door gives it its sentence);
 * - question set: `tool-output` with the normalized reply (skipped when none).
 */
export function settlementFrames(
  item: Pick<ItemRow, 'kind' | 'itemId' | 'approver'>,
  decider: { principal: Principal | null; via: string },
  outcome: SettlementOutcome
): StreamFrame[] {
  if (item.kind === 'elicitation') {
    const reply = outcome.reply ?? { answers: {}, skipped: true }
    return [{ t: 'event', event: { kind: 'tool-output', id: item.itemId, output: reply } }]
  }
  const status = outcome.status === 'answered' ? 'approved' : outcome.status
  const frames: StreamFrame[] = [
    {
      t: 'event',
      event: {
        kind: 'approval-settled',
        id: item.itemId,
        status,
        approver: item.approver,
        // Who decided is stored in the frame as the SPI has it; doors that serve frames to
        // browsers leave it out by default (invariant 8, docs/design.md).
        ...(decider.principal ? { decidedBy: decider.principal.id } : {}),
        decidedVia: decider.via,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
      },
    },
  ]
  if (status !== 'approved') {
    frames.push({
      t: 'event',
      event: {
        kind: 'tool-output-denied',
        id: item.itemId,
        status,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
      },
    })
  }
  return frames
}

/**
 * The calls a cancel denies: the segment's approvals that will not run now (pending, or
 * approved but never resumed), by item id, in the items' order. PURE.
 */
export function deniedCalls(items: Pick<ParkedItem, 'kind' | 'status' | 'itemId'>[]): string[] {
  return items
    .filter(
      (item) =>
        item.kind === 'approval' && (item.status === 'pending' || item.status === 'approved')
    )
    .map((item) => item.itemId)
}

/**
 * The frames a cancel writes: `tool-output-denied` (cancelled) for every call of the segment
 * that will not run now ({@link deniedCalls}), so the conversation stays valid for a next model
 * call, then `cancelled`. PURE.
 */
export function cancelFrames(calls: string[]): StreamFrame[] {
  return [...calls.map((id) => cancelledCall(id)), { t: 'event', event: { kind: 'cancelled' } }]
}

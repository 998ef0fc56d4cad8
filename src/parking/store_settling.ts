import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { affectedRows as affected, nowMs as now } from '../store/sql.js'
import {
  ITEM_KINDS,
  LIVE,
  json,
  parse,
  toItem,
  type ItemRow,
  type ParkingTables,
} from './store_rows.js'
import { withPageState, type AgentState } from '../core/agent_state.js'
import { deniedCalls } from './settlement_frames.js'
import type { ItemStatus } from './types.js'

/** How one item is settled (what {@link ItemSettling.settle} stores). */
export interface ItemOutcome {
  status: Exclude<ItemStatus, 'pending'>
  decidedBy: string | null
  decidedVia: string
  reason?: string | null
  editedInput?: unknown
  reply?: { answers: Record<string, string[]>; skipped: boolean }
}

/**
 * Settling items once: a decision (or expiry) on one item, or a cancel of a whole suspension.
 * Every write here runs inside the stream commit that stores the settlement frames, so a decision
 * and its frames commit together or not at all (invariants 5 and 7, docs/design.md).
 */
export class ItemSettling {
  constructor(readonly rows: ParkingTables) {}

  /**
   * Settle one item if it is still pending (and, unless `expired`, not past its expiry).
   * Returns whether this call won.
   */
  async settle(trx: TransactionClientContract, item: ItemRow, outcome: ItemOutcome) {
    const at = now()
    const query = trx
      .from(this.rows.items(item.kind))
      .where('run_id', item.runId)
      .where('park', item.park)
      .where('item_id', item.itemId)
      .where('status', 'pending')
    if (outcome.status !== 'expired' && outcome.status !== 'cancelled') {
      query.where((q) => q.whereNull('expires_at').orWhere('expires_at', '>=', at))
    }
    const update: Record<string, unknown> = {
      status: outcome.status,
      decided_by: outcome.decidedBy,
      decided_via: outcome.decidedVia,
      reason: outcome.reason ?? null,
      decided_at: at,
    }
    if (item.kind === 'approval' && outcome.editedInput !== undefined) {
      update.edited_input = json(outcome.editedInput)
    }
    if (item.kind === 'elicitation' && outcome.reply) update.reply = json(outcome.reply)
    return affected(await query.update(update)) === 1
  }

  /**
   * The page's state sent with a decision becomes the `state` of the input the stream's parked
   * segment resumes with (`withPageState`): stored on its suspensions, inside the decision's
   * commit, so the replica that claims the resume (this one or another, after a restart too)
   * hands it to the runner, and a refused decision stores nothing. By primary key, after the
   * stream's row lock (the lock order of `SuspensionClaims.claim`).
   */
  async carryPageState(trx: TransactionClientContract, streamRunId: string, state: AgentState) {
    const parked = await trx
      .from(this.rows.tables.suspensions)
      .select('run_id', 'park', 'input')
      .where('stream_run_id', streamRunId)
      .where('status', 'parked')
    for (const row of parked as { run_id: string; park: unknown; input: string | null }[]) {
      await trx
        .from(this.rows.tables.suspensions)
        .where('run_id', row.run_id)
        .where('park', Number(row.park))
        .where('status', 'parked')
        .update({ input: json(withPageState(parse(row.input), state)) })
    }
  }

  /**
   * Pending items of a stream, counted over both tables: the items of its segment that parked
   * (earlier segments' items are all settled before it resumed).
   */
  async pendingInStream(
    client: QueryClientContract | TransactionClientContract,
    streamRunId: string
  ) {
    return this.rows.countPending(client, { stream_run_id: streamRunId })
  }

  /**
   * Cancel the segment a stream parked on: every run that parked in it (its suspensions) and
   * every pending item. Inside the stream commit (after its row lock, which decisions take too).
   * `calls` are the calls the cancel's frames deny, read before the commit: when the segment's
   * pending or approved calls are no longer exactly those (a decision committed in between,
   * with its own frames), nothing changes and it returns `'changed'`: read again and retry.
   * Returns false (nothing changed) when one of them is not parked (still writing, resuming)
   * or nothing is pending any more: the cancel lost.
   */
  async cancel(
    trx: TransactionClientContract,
    streamRunId: string,
    by: string | null,
    calls: string[]
  ): Promise<boolean | 'changed'> {
    const { suspensions, approvals } = this.rows.tables
    const live = await trx
      .from(suspensions)
      .select('status', 'run_id', 'park')
      .where('stream_run_id', streamRunId)
      .whereIn('status', LIVE)
    if (live.length === 0 || live.some((row: { status: string }) => row.status !== 'parked')) {
      return false
    }
    if ((await this.pendingInStream(trx, streamRunId)) === 0) return false
    // The calls it would deny now, by the same rule as the frames (`deniedCalls`).
    const items: ItemRow[] = []
    for (const row of live) {
      const rows = await trx.from(approvals).where('run_id', row.run_id).where('park', row.park)
      items.push(...rows.map((item: Record<string, any>) => toItem('approval', item)))
    }
    const held = deniedCalls(items)
    const sorted = (ids: string[]) => JSON.stringify([...ids].sort())
    if (sorted(held) !== sorted(calls)) return 'changed'
    const at = now()
    const done = await trx
      .from(suspensions)
      .where('stream_run_id', streamRunId)
      .where('status', 'parked')
      .update({ status: 'cancelled', updated_at: at })
    if (affected(done) !== live.length) return false
    for (const kind of ITEM_KINDS) {
      await trx
        .from(this.rows.items(kind))
        .where('stream_run_id', streamRunId)
        .where('status', 'pending')
        .update({ status: 'cancelled', decided_by: by, decided_via: 'cancel', decided_at: at })
    }
    return true
  }
}

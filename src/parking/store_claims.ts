import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { affectedRows as affected, commitChecked, endedUnder, nowMs as now } from '../store/sql.js'
import { retryLockConflicts } from '../store/transient.js'
import type { ItemSettling } from './store_settling.js'
import {
  ITEM_KINDS,
  LIVE,
  parse,
  type ClaimedSuspension,
  type ParkingTables,
} from './store_rows.js'
import type { SettledItem } from './types.js'

/**
 * Claims: exactly one replica takes a decided segment to resume it. The unit is the segment a
 * stream parked on: every run that parked in it (one suspension row each) is claimed, resumed
 * and marked together. A claim is a lease (`claim_expires_at`, epoch ms): a claimer that dies
 * before starting the resume leaves the segment claimable again once the lease lapses.
 */
export class SuspensionClaims {
  constructor(
    readonly rows: ParkingTables,
    readonly settling: ItemSettling
  ) {}

  /**
   * Claim the segment that the suspension `runId`/`park` is part of, for resuming: atomic, so
   * exactly one replica wins. Claimable when every run that parked in it is parked (or claimed
   * by a replica whose claim lapsed before it started the resume) and none of their items is
   * pending. Returns what `resume` needs, or null (not claimable, or another replica won).
   */
  async claim(
    runId: string,
    park: number,
    claimer: string,
    leaseMs: number
  ): Promise<ClaimedSuspension | null> {
    // A deadlock or a serialization failure rolled the attempt back whole: it is run again.
    return retryLockConflicts(() => this.#claim(runId, park, claimer, leaseMs))
  }

  async #claim(
    runId: string,
    park: number,
    claimer: string,
    leaseMs: number
  ): Promise<ClaimedSuspension | null> {
    const { suspensions, streams } = this.rows.tables
    const member = await this.rows.client
      .from(suspensions)
      .select('stream_run_id')
      .where('run_id', runId)
      .where('park', park)
      .first()
    if (!member) return null
    const stream: string = member.stream_run_id
    const trx = await this.rows.client.transaction()
    try {
      const at = now()
      // The lock order of every writer of a stream's parking rows: the stream's row first (a
      // park, a decision, a cancel and the resume's reopen all write inside its commit), then
      // its suspensions by their primary keys. A range update here (`stream_run_id` and a
      // status) locked index ranges reaching other streams' rows on MariaDB, and deadlocked
      // with their parks and decisions. (Rows matched are locked even when nothing changes.)
      await trx.from(streams).where('run_id', stream).update({ updated_at: at })
      const live: { run_id: string; park: unknown; status: string; claim_expires_at: unknown }[] =
        await trx
          .from(suspensions)
          .select('run_id', 'park', 'status', 'claim_expires_at')
          .where('stream_run_id', stream)
          .whereIn('status', LIVE)
      const takeable = (row: (typeof live)[number]) =>
        row.status === 'parked' || (row.status === 'claimed' && Number(row.claim_expires_at) < at)
      // One still writing (open) or validly claimed by another replica: not ours to take.
      if (
        live.length === 0 ||
        !live.every(takeable) ||
        (await this.settling.pendingInStream(trx, stream)) > 0
      ) {
        await trx.rollback()
        return null
      }
      for (const row of live) {
        const taken = await trx
          .from(suspensions)
          .where('run_id', row.run_id)
          .where('park', row.park as number)
          .where('status', row.status)
          .update({
            status: 'claimed',
            claimed_by: claimer,
            claim_expires_at: at + leaseMs,
            attempts: trx.raw('attempts + 1'),
            updated_at: at,
          })
        if (affected(taken) !== 1) {
          await trx.rollback()
          return null
        }
      }
      const members: Record<string, any>[] = await trx
        .from(suspensions)
        .where('stream_run_id', stream)
        .where('status', 'claimed')
        .orderBy('created_at', 'asc')
        .orderBy('run_id', 'asc')
      const decided = { at: 0 }
      const items = await this.#settledItems(trx, members, decided)
      const target = await this.#target(trx, stream, members)
      await commitChecked(trx)
      const first = members[0]
      return {
        ...target,
        park: Number(first.park),
        parks: members.map((row) => ({ runId: row.run_id as string, park: Number(row.park) })),
        streamRunId: stream,
        threadId: first.thread_id,
        principal: parse(first.principal),
        checkpoint: parse(first.checkpoint),
        input: parse(first.input),
        items,
        decidedAt: decided.at || undefined,
      }
    } catch (error) {
      // Ended under the work (see endedUnder): its first error is the cause.
      if (trx.isCompleted) throw (await endedUnder(trx)) ?? error
      await trx.rollback().catch(() => {})
      throw error
    }
  }

  /**
   * The claimer started the resume: the segment is done with (the stream's lease takes over).
   * Inside the stream's reopen (`client`: its transaction). Returns whether its claim still held.
   */
  async markResumed(
    streamRunId: string,
    claimer: string,
    client: QueryClientContract | TransactionClientContract = this.rows.client
  ) {
    return this.#endClaim(client, streamRunId, claimer, 'resumed')
  }

  /**
   * Give a claim back before the resume started (the claimer is draining): the segment is
   * parked again, claimable at once by any replica (the sweeper's next round takes it), instead
   * of waiting for the claim's lease to lapse. Returns whether the claim was still held.
   */
  async release(streamRunId: string, claimer: string) {
    return this.#endClaim(this.rows.client, streamRunId, claimer, 'parked')
  }

  /** Move the segment out of `claimer`'s claim to `status`; whether the claim still held. */
  async #endClaim(
    client: QueryClientContract | TransactionClientContract,
    streamRunId: string,
    claimer: string,
    status: 'resumed' | 'parked'
  ) {
    const { suspensions } = this.rows.tables
    const claimed = await client
      .from(suspensions)
      .select('run_id', 'park')
      .where('stream_run_id', streamRunId)
      .where('status', 'claimed')
      .where('claimed_by', claimer)
    let ended = 0
    // By primary key (see `claim`: no range lock reaching another stream's rows).
    for (const row of claimed) {
      ended += affected(
        await client
          .from(suspensions)
          .where('run_id', row.run_id)
          .where('park', row.park)
          .where('status', 'claimed')
          .where('claimed_by', claimer)
          .update({ status, updated_at: now() })
      )
    }
    return ended > 0
  }

  /**
   * What a resumed segment was given (its first suspension's checkpoint, every settled item of
   * `parks`), read again for a replica that continues it after its writer died. `null` when the
   * suspensions are gone (purged).
   */
  async resumedSegment(
    parks: { runId: string; park: number }[]
  ): Promise<{ checkpoint: unknown; items: SettledItem[] } | null> {
    const members: Record<string, any>[] = []
    for (const { runId, park } of parks) {
      const row = await this.rows.client
        .from(this.rows.tables.suspensions)
        .where('run_id', runId)
        .where('park', park)
        .first()
      if (row) members.push(row)
    }
    if (members.length === 0) return null
    return {
      checkpoint: parse(members[0].checkpoint),
      items: await this.#settledItems(this.rows.client, members),
    }
  }

  /**
   * Suspensions whose segment may be claimable: parked, or claimed with a lapsed claim, in a
   * stream with nothing pending. One per stream, oldest first.
   */
  async claimCandidates(limit: number): Promise<{ runId: string; park: number }[]> {
    const { suspensions: s, approvals, elicitations } = this.rows.tables
    const pending = (table: string) => (q: any) =>
      q
        .from(table)
        .whereRaw(`${table}.stream_run_id = ${s}.stream_run_id`)
        .where(`${table}.status`, 'pending')
    const rows = await this.rows.client
      .from(s)
      .select('run_id', 'park', 'stream_run_id')
      // Only segments nothing is pending on: the rest wait for a person, however many there are.
      .whereNotExists(pending(approvals))
      .whereNotExists(pending(elicitations))
      .where((q) =>
        q
          .where('status', 'parked')
          .orWhere((c) => c.where('status', 'claimed').where('claim_expires_at', '<', now()))
      )
      .orderBy('updated_at', 'asc')
      .limit(limit)
    const seen = new Set<string>()
    const out: { runId: string; park: number }[] = []
    for (const row of rows as { run_id: string; park: unknown; stream_run_id: string }[]) {
      if (seen.has(row.stream_run_id)) continue
      seen.add(row.stream_run_id)
      out.push({ runId: row.run_id, park: Number(row.park) })
    }
    return out
  }

  /**
   * Who is resumed: the run that parked, when one did (a child resumes as itself, and continues
   * its parent); when several did, the run whose segment it was (its `start` or `resume`
   * returned parked), with their parent. That run is the stream's own, or one resumed before
   * (its own suspension row tells its parent).
   */
  async #target(trx: TransactionClientContract, stream: string, members: Record<string, any>[]) {
    if (members.length === 1) {
      return { runId: members[0].run_id as string, parentRunId: members[0].parent_run_id }
    }
    const runId: string = members[0].segment_run_id ?? stream
    if (runId === stream) return { runId, parentRunId: null }
    const own = await trx
      .from(this.rows.tables.suspensions)
      .select('parent_run_id')
      .where('run_id', runId)
      .orderBy('park', 'desc')
      .first()
    return { runId, parentRunId: (own?.parent_run_id as string | null) ?? null }
  }

  /**
   * Every item of the segment's runs as `resume` receives it: approvals, then question sets,
   * each in stream order. `runId` tells a child's items from another's.
   */
  async #settledItems(
    trx: QueryClientContract | TransactionClientContract,
    members: Record<string, any>[],
    /** Set to the last decision's `decided_at` (database time, epoch ms). */
    decided?: { at: number }
  ): Promise<SettledItem[]> {
    const items: SettledItem[] = []
    for (const kind of ITEM_KINDS) {
      const rows: Record<string, any>[] = []
      for (const member of members) {
        rows.push(
          ...(await trx
            .from(this.rows.items(kind))
            .where('run_id', member.run_id)
            .where('park', member.park))
        )
      }
      rows.sort((a, b) => Number(a.stream_seq) - Number(b.stream_seq))
      for (const row of rows) {
        if (decided) decided.at = Math.max(decided.at, Number(row.decided_at ?? 0))
        const settled: SettledItem = {
          kind,
          id: row.item_id,
          runId: row.run_id,
          park: Number(row.park),
          status: row.status,
          decidedBy: row.decided_by,
          decidedVia: row.decided_via,
          reason: row.reason,
        }
        if (kind === 'approval') {
          settled.input = row.edited_input !== null ? parse(row.edited_input) : parse(row.input)
        } else {
          const reply = parse(row.reply) as {
            answers: Record<string, string[]>
            skipped: boolean
          } | null
          settled.answers = reply?.answers ?? {}
          settled.skipped = reply?.skipped ?? row.status !== 'answered'
        }
        items.push(settled)
      }
    }
    return items
  }
}

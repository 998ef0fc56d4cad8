import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { affectedRows as affected, commitChecked, nowMs as now } from '../store/sql.js'
import type { ItemSettling } from './store_settling.js'
import { ITEM_KINDS, parse, type ClaimedSuspension, type ParkingTables } from './store_rows.js'
import type { SettledItem } from './types.js'

/**
 * Claims: exactly one replica takes a decided suspension to resume it. A claim is a lease
 * (`claim_expires_at`, epoch ms): a claimer that dies before starting the resume leaves the
 * suspension claimable again once the lease lapses.
 */
export class SuspensionClaims {
  constructor(
    readonly rows: ParkingTables,
    readonly settling: ItemSettling
  ) {}

  /**
   * Claim a suspension for resuming: atomic, so exactly one replica wins. Claimable when parked
   * with nothing pending, or claimed by a replica whose claim lapsed before it started the
   * resume. Returns what `resume` needs, or null (not claimable, or another replica won).
   */
  async claim(
    runId: string,
    park: number,
    claimer: string,
    leaseMs: number
  ): Promise<ClaimedSuspension | null> {
    const suspensions = this.rows.tables.suspensions
    const trx = await this.rows.client.transaction()
    try {
      const at = now()
      const locked = await trx
        .from(suspensions)
        .where('run_id', runId)
        .where('park', park)
        .where((q) =>
          q
            .where('status', 'parked')
            .orWhere((c) => c.where('status', 'claimed').where('claim_expires_at', '<', at))
        )
        .update({ updated_at: at })
      if (affected(locked) !== 1 || (await this.settling.pendingCount(trx, runId, park)) > 0) {
        await trx.rollback()
        return null
      }
      await trx
        .from(suspensions)
        .where('run_id', runId)
        .where('park', park)
        .update({
          status: 'claimed',
          claimed_by: claimer,
          claim_expires_at: at + leaseMs,
          attempts: trx.raw('attempts + 1'),
        })
      const row = await trx.from(suspensions).where('run_id', runId).where('park', park).first()
      const items = await this.#settledItems(trx, runId, park)
      await commitChecked(trx)
      return {
        runId,
        park,
        streamRunId: row.stream_run_id,
        threadId: row.thread_id,
        parentRunId: row.parent_run_id,
        principal: parse(row.principal),
        checkpoint: parse(row.checkpoint),
        input: parse(row.input),
        items,
      }
    } catch (error) {
      if (!trx.isCompleted) await trx.rollback().catch(() => {})
      throw error
    }
  }

  /** The claimer started the resume: the suspension is done with (the stream's lease takes over). */
  async markResumed(runId: string, park: number, claimer: string) {
    const done = await this.rows.client
      .from(this.rows.tables.suspensions)
      .where('run_id', runId)
      .where('park', park)
      .where('status', 'claimed')
      .where('claimed_by', claimer)
      .update({ status: 'resumed', updated_at: now() })
    return affected(done) === 1
  }

  /** Suspensions that may be claimable: parked, or claimed with a lapsed claim. Oldest first. */
  async claimCandidates(limit: number): Promise<{ runId: string; park: number }[]> {
    const { suspensions: s, approvals, elicitations } = this.rows.tables
    const pending = (table: string) => (q: any) =>
      q
        .from(table)
        .whereRaw(`${table}.run_id = ${s}.run_id and ${table}.park = ${s}.park`)
        .where(`${table}.status`, 'pending')
    const rows = await this.rows.client
      .from(s)
      .select('run_id', 'park')
      // Only those nothing is pending on: the rest wait for a person, however many there are.
      .whereNotExists(pending(approvals))
      .whereNotExists(pending(elicitations))
      .where((q) =>
        q
          .where('status', 'parked')
          .orWhere((c) => c.where('status', 'claimed').where('claim_expires_at', '<', now()))
      )
      .orderBy('updated_at', 'asc')
      .limit(limit)
    return rows.map((row: { run_id: string; park: unknown }) => ({
      runId: row.run_id,
      park: Number(row.park),
    }))
  }

  /** Every item of one park as `resume` receives it, in stream order per kind. */
  async #settledItems(
    trx: TransactionClientContract,
    runId: string,
    park: number
  ): Promise<SettledItem[]> {
    const items: SettledItem[] = []
    for (const kind of ITEM_KINDS) {
      const rows = await trx
        .from(this.rows.items(kind))
        .where('run_id', runId)
        .where('park', park)
        .orderBy('stream_seq', 'asc')
      for (const row of rows) {
        const settled: SettledItem = {
          kind,
          id: row.item_id,
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

import type { Principal } from '../core/run.js'
import { nowMs as now } from '../store/sql.js'
import {
  ITEM_KINDS,
  LIVE,
  parse,
  toItem,
  toParkedItem,
  type ItemRow,
  type ParkingTables,
} from './store_rows.js'
import type { ParkedItem } from './types.js'

/** A run's suspension as {@link ParkingReads.latestSuspension} reads it. */
export interface SuspensionRow {
  runId: string
  park: number
  streamRunId: string
  principal: Principal | null
  /** `open`, `parked`, `claimed`, `resumed`, `cancelled` or `abandoned`. */
  status: string
}

/**
 * The store's own reads of suspensions and items, for the decisions and the sweeper: a
 * suspension's status, a run's newest suspension, a stream's current segment and its items,
 * lapsed items. What people read (items by id, listings, a stream's snapshot) is `queries.ts`.
 */
export class ParkingReads {
  constructor(readonly rows: ParkingTables) {}

  /** The status of a suspension, or null. */
  async suspensionStatus(runId: string, park: number): Promise<string | null> {
    const row = await this.rows.client
      .from(this.rows.tables.suspensions)
      .select('status')
      .where('run_id', runId)
      .where('park', park)
      .first()
    return row ? row.status : null
  }

  /** The run's newest suspension, whatever its status. */
  async latestSuspension(runId: string): Promise<SuspensionRow | null> {
    const row = await this.rows.client
      .from(this.rows.tables.suspensions)
      .where('run_id', runId)
      .orderBy('park', 'desc')
      .first()
    return row
      ? {
          runId: row.run_id as string,
          park: Number(row.park),
          streamRunId: row.stream_run_id as string,
          principal: parse(row.principal) as Principal | null,
          status: row.status as string,
        }
      : null
  }

  /** The suspensions of a stream's current segment (open, parked or claimed), oldest first. */
  async liveInStream(streamRunId: string): Promise<SuspensionRow[]> {
    const rows = await this.rows.client
      .from(this.rows.tables.suspensions)
      .where('stream_run_id', streamRunId)
      .whereIn('status', LIVE)
      .orderBy('created_at', 'asc')
      .orderBy('run_id', 'asc')
    return rows.map((row: Record<string, any>) => ({
      runId: row.run_id as string,
      park: Number(row.park),
      streamRunId: row.stream_run_id as string,
      principal: parse(row.principal) as Principal | null,
      status: row.status as string,
    }))
  }

  /**
   * EVERY item of a stream's current segment (of each run that parked in it), whatever its
   * status, in stream order: never a page.
   */
  async segmentItems(streamRunId: string): Promise<ParkedItem[]> {
    const items: ParkedItem[] = []
    for (const member of await this.liveInStream(streamRunId)) {
      for (const kind of ITEM_KINDS) {
        const rows = await this.rows.client
          .from(this.rows.items(kind))
          .where('run_id', member.runId)
          .where('park', member.park)
        for (const row of rows) items.push(toParkedItem(toItem(kind, row), row))
      }
    }
    return items.sort((a, b) => a.streamSeq - b.streamSeq)
  }

  /** Pending items past their expiry, oldest first (up to `limit` per item kind). */
  async lapsed(limit: number): Promise<ItemRow[]> {
    const out: ItemRow[] = []
    for (const kind of ITEM_KINDS) {
      const rows = await this.rows.client
        .from(this.rows.items(kind))
        .where('status', 'pending')
        .whereNotNull('expires_at')
        .where('expires_at', '<', now())
        .orderBy('expires_at', 'asc')
        .limit(limit)
      out.push(...rows.map((row: Record<string, any>) => toItem(kind, row)))
    }
    return out
  }
}

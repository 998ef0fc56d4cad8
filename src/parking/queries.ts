import { DEFAULTS } from '../defaults.js'
import { toStreamState, type StreamState } from '../store/rows.js'
import {
  ITEM_KINDS,
  findItemRow,
  toItem,
  toParkedItem,
  type ItemRow,
  type ParkingTables,
} from './store_rows.js'
import type { ParkedItem } from './types.js'

/**
 * A stream as {@link ParkingQueries.streamAfter} reads it, in one snapshot: its row, its next
 * segment end after a seq, its newest suspension's status and how many items it waits for.
 */
export interface StreamAfter {
  stream: StreamState
  /** The first segment end after the seq asked about (`null`: none yet, or none asked). */
  nextEnd: number | null
  /**
   * The newest suspension's status (`open`, `parked`, `claimed`, `resumed`, `cancelled` or
   * `abandoned`), `null` when it never parked.
   */
  suspension: string | null
  /** Pending items (approvals and elicitations) of the stream. */
  pending: number
}

/** A filter for {@link ParkingQueries.list}: `page` from 1 (default 1), `perPage` capped. */
export interface ListFilter {
  /** `pending` (default) or `decided` (every other status: a history view). */
  status?: 'pending' | 'decided'
  threadId?: string
  runId?: string
  streamRunId?: string
  page?: number
  perPage?: number
}

/**
 * Reading parked items and a stream's parking state: an item by id (its stored row, or as a
 * person sees it), a stream's pending items and its snapshot after a segment end, listings for
 * a person. What the doors, the decision routes, the admin page and a run's inspection read; the
 * decisions read items through it too. Every read here is SQL over the parking tables (the
 * operator's queue and history pages are `queue.ts`).
 */
export class ParkingQueries {
  constructor(readonly rows: ParkingTables) {}

  /**
   * A parked item's stored row (with its principal: never serve it to a browser) at `park`, or
   * at its newest park ({@link findItemRow}); null when there is none.
   */
  async findItem(runId: string, itemId: string, park?: number): Promise<ItemRow | null> {
    const found = await findItemRow(this.rows, runId, itemId, park)
    return found && toItem(found.kind, found.row)
  }

  /**
   * One item as a person sees it (any status, no checkpoint, no stored principal): at `park`,
   * or at its newest park, by the same lookup as {@link findItem}; null when there is none.
   */
  async listedItem(runId: string, itemId: string, park?: number): Promise<ParkedItem | null> {
    const found = await findItemRow(this.rows, runId, itemId, park)
    return found && toParkedItem(toItem(found.kind, found.row), found.row)
  }

  /**
   * Every park's row of an item id, from either table, oldest park first (a tool-call id a
   * provider reuses has one row per park).
   */
  async findItems(runId: string, itemId: string): Promise<ItemRow[]> {
    const out: ItemRow[] = []
    for (const kind of ITEM_KINDS) {
      const rows = await this.rows.client
        .from(this.rows.items(kind))
        .where('run_id', runId)
        .where('item_id', itemId)
        .orderBy('park', 'asc')
      out.push(...rows.map((row: Record<string, any>) => toItem(kind, row)))
    }
    return out.sort((a, b) => a.park - b.park)
  }

  /**
   * The newest suspension inside a stream, whatever its status, or null: `{ runId, park, status }`
   * (`status`: `open`, `parked`, `claimed`, `resumed`, `cancelled` or `abandoned`).
   */
  async newestInStream(
    streamRunId: string
  ): Promise<{ runId: string; park: number; status: string } | null> {
    const row = await this.rows.client
      .from(this.rows.tables.suspensions)
      .select('run_id', 'park', 'status')
      .where('stream_run_id', streamRunId)
      .orderBy('updated_at', 'desc')
      .orderBy('park', 'desc')
      .first()
    return row
      ? { runId: row.run_id as string, park: Number(row.park), status: row.status as string }
      : null
  }

  /**
   * The stream's row, its first segment end after `afterSeq` (none asked: `null`), its newest
   * suspension's status and its pending items, in ONE statement: one snapshot on every
   * database. Reads made one after another can straddle a resume's steps (the stream reopened
   * with its suspension marked resumed, then ended again) and see none of them: the stream
   * still ended, the suspension already resumed. `null` when the stream does not exist.
   */
  async streamAfter(streamRunId: string, afterSeq?: number): Promise<StreamAfter | null> {
    const { streams, frames, suspensions, approvals, elicitations } = this.rows.tables
    const client = this.rows.client
    const pending = (table: string) =>
      `(select count(*) from ${table} i where i.stream_run_id = s.run_id and i.status = 'pending')`
    const query = client
      .knexQuery()
      .from({ s: streams })
      .select('s.last_seq', 's.rev', 's.status', 's.lease_expires_at', 's.created_at')
      .select(
        client.knexRawQuery(
          `(select p.status from ${suspensions} p where p.stream_run_id = s.run_id
  order by p.updated_at desc, p.park desc limit 1) as suspension`
        )
      )
      .select(client.knexRawQuery(`${pending(approvals)} + ${pending(elicitations)} as pending`))
      .where('s.run_id', streamRunId)
    if (afterSeq !== undefined) {
      query.select(
        client.knexRawQuery(
          `(select min(f.seq) from ${frames} f where f.run_id = s.run_id and f.kind = 'end'
  and f.body = '' and f.seq > ?) as next_end`,
          [afterSeq]
        )
      )
    }
    const row = (await query.first()) as Record<string, any> | undefined
    if (!row) return null
    return {
      stream: toStreamState(row),
      nextEnd: row.next_end === null || row.next_end === undefined ? null : Number(row.next_end),
      suspension: row.suspension ?? null,
      pending: Number(row.pending),
    }
  }

  /**
   * EVERY pending item of a stream (what its parked segment waits for), in stream order, not a
   * page: for callers that must see all of them (a resume answers them all). A segment holds at
   * most `DEFAULTS.maxItemsPerSegment` items.
   */
  async pendingOf(streamRunId: string): Promise<ParkedItem[]> {
    const items: ParkedItem[] = []
    for (const kind of ITEM_KINDS) {
      const rows = await this.rows.client
        .from(this.rows.items(kind))
        .where('stream_run_id', streamRunId)
        .where('status', 'pending')
      for (const row of rows) items.push(toParkedItem(toItem(kind, row), row))
    }
    return items.sort((a, b) => a.streamSeq - b.streamSeq)
  }

  /**
   * Items for a person: pending ones (or decided ones, for a history view), newest first,
   * filtered, paged (`page` from 1; `perPage` up to `DEFAULTS.parkedPerPageMax`). Never the
   * checkpoint or the stored principal.
   */
  async list(filter: ListFilter = {}): Promise<ParkedItem[]> {
    const page = Math.max(1, filter.page ?? 1)
    const perPage = Math.min(
      DEFAULTS.parkedPerPageMax,
      Math.max(1, filter.perPage ?? DEFAULTS.parkedPerPage)
    )
    const items: ParkedItem[] = []
    const limit = Math.min(page, 1000) * perPage
    for (const kind of ITEM_KINDS) {
      const query = this.rows.client
        .from(this.rows.items(kind))
        .orderBy('created_at', 'desc')
        .orderBy('run_id', 'asc')
        .orderBy('item_id', 'asc')
        .limit(limit)
      if (filter.status === 'decided') query.whereNot('status', 'pending')
      else query.where('status', 'pending')
      if (filter.threadId) query.where('thread_id', filter.threadId)
      if (filter.runId) query.where('run_id', filter.runId)
      if (filter.streamRunId) query.where('stream_run_id', filter.streamRunId)
      for (const row of await query) items.push(toParkedItem(toItem(kind, row), row))
    }
    const key = (i: ParkedItem) => `${i.runId}\u0000${i.itemId}`
    items.sort((a, b) =>
      a.createdAt !== b.createdAt
        ? a.createdAt < b.createdAt
          ? 1
          : -1
        : key(a) < key(b)
          ? -1
          : key(a) > key(b)
            ? 1
            : 0
    )
    return items.slice((page - 1) * perPage, limit)
  }
}

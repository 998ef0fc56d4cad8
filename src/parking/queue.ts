import type { DatabaseQueryBuilderContract } from '@adonisjs/lucid/types/querybuilder'
import { DEFAULTS } from '../defaults.js'
import { nowMs } from '../store/sql.js'
import {
  ITEM_KINDS,
  toItem,
  toParkedItem,
  type ItemKind,
  type ParkingTables,
} from './store_rows.js'
import type { ItemStatus, ParkedItem } from './types.js'

/**
 * The operator's queue and history over both item tables: filtered, ordered, keyset-paged (no
 * cap: any row is reachable by following `next`), with counts per filter value. Pending items
 * order by when they were asked (`created_at`), decided ones by when they were decided
 * (`decided_at`); ties by kind, run, park, item id, so the order is total and a page boundary
 * never skips or repeats a row. The `(status, created_at)` and `(decided_at)` indexes
 * (`addQueueIndexes`) serve the first page and the live watermark without a scan.
 */

/** Where a page starts: the sort key of the last row of the previous page. */
export interface QueueKey {
  /** The sort column's value: asked (pending) or decided (history), epoch ms. */
  at: number
  kind: ItemKind
  runId: string
  park: number
  itemId: string
}

/** How a queue or history read is narrowed. Every field is optional but `view`. */
export interface QueueFilter {
  /** `pending`: the queue; `decided`: the history (every other status). */
  view: 'pending' | 'decided'
  /** History only: these statuses. */
  status?: Exclude<ItemStatus, 'pending'>
  /** A tool name (approvals), or `question set` (every elicitation). */
  tool?: string
  /** Who may decide: `requester` or a role. */
  approver?: string
  threadId?: string
  /** The stream's run or the parked run. */
  runId?: string
  /** The age bucket `askedFrom`/`askedUntil` came from (the counts match groups by it). */
  age?: AgeBucket
  /** Asked no earlier than this (epoch ms). */
  askedFrom?: number
  /** Asked before this (epoch ms). */
  askedUntil?: number
  /** History: how it was decided (`chat`, `admin`, `api`, `expiry`, `cancel`, `system`). */
  via?: string
  /** History: the principal id that decided. */
  decidedBy?: string
  /** History: the reason contains this (case-insensitive). */
  reason?: string
}

/** How long ago an item was asked: within the hour, 1 hour to 1 day, over a day. */
export type AgeBucket = 'lt1h' | '1h-1d' | 'gt1d'

/** The question-set bucket of the tool facet. */
export const QUESTION_SET = 'question set'

/** Counts per value of each filter, each with every OTHER filter applied (a facet count). */
export interface QueueCounts {
  total: number
  tool: [string, number][]
  approver: [string, number][]
  status: [string, number][]
  via: [string, number][]
  /** Asked within the last hour, 1 hour to 1 day ago, more than a day ago. */
  age: { lt1h: number; h1to1d: number; gt1d: number }
}

/** A cheap fingerprint of the queue: changes whenever an item is parked or decided. */
export interface QueueWatermark {
  pending: number
  newestAsked: number
  newestDecided: number
}

const HOUR = 3_600_000
/** The most values a facet lists (the most frequent first). */
const FACET_VALUES = 50

type Query = DatabaseQueryBuilderContract<any>

/** A LIKE pattern matching `text` literally anywhere (escape character `!`, the same on every dialect). */
const contains = (text: string) => `%${text.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`

/**
 * The operator's queue (`view: 'pending'`) and history (`view: 'decided'`): keyset pages, counts
 * per filter value, and the fingerprint the live queue polls (see the top of this file). What the
 * admin page reads; one item by id is `ParkingQueries.listedItem`.
 */
export class ParkingQueue {
  constructor(readonly rows: ParkingTables) {}

  /** The column a view orders by. */
  #at(filter: QueueFilter) {
    return filter.view === 'pending' ? 'created_at' : 'decided_at'
  }

  /** Whether `kind`'s table can hold rows matching `filter` (a tool name excludes question sets). */
  #fits(kind: ItemKind, filter: Omit<QueueFilter, 'view'>) {
    if (filter.tool === undefined) return true
    return kind === 'elicitation' ? filter.tool === QUESTION_SET : filter.tool !== QUESTION_SET
  }

  /** `filter` applied to a query on `kind`'s table, the fields in `skip` left out. */
  #where(query: Query, kind: ItemKind, filter: QueueFilter, skip: Set<string> = new Set()) {
    if (filter.view === 'pending') query.where('status', 'pending')
    else if (filter.status && !skip.has('status')) query.where('status', filter.status)
    else query.whereNot('status', 'pending')
    if (filter.tool !== undefined && kind === 'approval' && !skip.has('tool'))
      query.where('tool_name', filter.tool)
    if (filter.approver !== undefined && !skip.has('approver'))
      query.where('approver', filter.approver)
    if (filter.threadId !== undefined) query.where('thread_id', filter.threadId)
    if (filter.runId !== undefined) {
      const runId = filter.runId
      query.where((q) => q.where('run_id', runId).orWhere('stream_run_id', runId))
    }
    if (filter.askedFrom !== undefined && !skip.has('age'))
      query.where('created_at', '>=', filter.askedFrom)
    if (filter.askedUntil !== undefined && !skip.has('age'))
      query.where('created_at', '<', filter.askedUntil)
    if (filter.via !== undefined && !skip.has('via')) query.where('decided_via', filter.via)
    if (filter.decidedBy !== undefined) query.where('decided_by', filter.decidedBy)
    if (filter.reason !== undefined && filter.reason !== '')
      query.whereRaw(`lower(reason) like ? escape '!'`, [contains(filter.reason)])
    return query
  }

  /**
   * One page of the queue (`view: 'pending'`, by when asked) or the history (`view: 'decided'`,
   * by when decided), filtered: `limit` items (1 to `DEFAULTS.parkedPerPageMax`) after `after`
   * in `order`, and the key the next page starts after (`null` on the last page). Never the
   * checkpoint or the stored principal.
   */
  async page(
    filter: QueueFilter,
    options: { order: 'newest' | 'oldest'; after?: QueueKey; limit: number }
  ): Promise<{ items: ParkedItem[]; next: QueueKey | null }> {
    const limit = Math.min(DEFAULTS.parkedPerPageMax, Math.max(1, options.limit))
    const at = this.#at(filter)
    const desc = options.order === 'newest'
    const dir = desc ? 'desc' : 'asc'
    const cmp = desc ? '<' : '>'
    const rows: { key: QueueKey; item: ParkedItem }[] = []
    for (const [rank, kind] of ITEM_KINDS.entries()) {
      if (!this.#fits(kind, filter)) continue
      const query = this.#where(this.rows.client.from(this.rows.items(kind)), kind, filter)
      const after = options.after
      if (after) {
        const cursorRank = ITEM_KINDS.indexOf(after.kind)
        // Ties on the sort column: kinds in ITEM_KINDS order (reversed when descending), then
        // run, park and item id in the same direction.
        const before = desc ? rank > cursorRank : rank < cursorRank
        query.where((q) => {
          q.where(at, cmp, after.at)
          if (rank === cursorRank) {
            q.orWhere((same) =>
              same
                .where(at, after.at)
                .where((tie) =>
                  tie
                    .where('run_id', cmp, after.runId)
                    .orWhere((r) =>
                      r
                        .where('run_id', after.runId)
                        .where((p) =>
                          p
                            .where('park', cmp, after.park)
                            .orWhere((i) =>
                              i.where('park', after.park).where('item_id', cmp, after.itemId)
                            )
                        )
                    )
                )
            )
          } else if (before) {
            q.orWhere(at, after.at)
          }
        })
      }
      query
        .orderBy(at, dir)
        .orderBy('run_id', dir)
        .orderBy('park', dir)
        .orderBy('item_id', dir)
        .limit(limit + 1)
      for (const row of await query) {
        const item = toParkedItem(toItem(kind, row), row)
        rows.push({
          item,
          key: {
            at: Number(row[at]),
            kind,
            runId: item.runId,
            park: item.park,
            itemId: item.itemId,
          },
        })
      }
    }
    const rank = (kind: ItemKind) => ITEM_KINDS.indexOf(kind)
    const compare = (a: QueueKey, b: QueueKey) => {
      const order: [number | string, number | string][] = [
        [a.at, b.at],
        [desc ? -rank(a.kind) : rank(a.kind), desc ? -rank(b.kind) : rank(b.kind)],
        [a.runId, b.runId],
        [a.park, b.park],
        [a.itemId, b.itemId],
      ]
      for (const [x, y] of order) {
        if (x === y) continue
        // Ids compare by UTF-16 code units here; the databases compare them bytewise (binary
        // collation), which agrees for the id grammar's ASCII.
        const less = x < y
        return (desc ? !less : less) ? -1 : 1
      }
      return 0
    }
    rows.sort((a, b) => compare(a.key, b.key))
    const items = rows.slice(0, limit)
    const next = rows.length > limit ? items[items.length - 1].key : null
    return { items: items.map((r) => r.item), next }
  }

  /**
   * Counts per filter value (see {@link QueueCounts}), for the view and filter given: ONE
   * grouped read per item table (by tool, approver, status, how, and age bucket at `now`), every
   * facet then summed from its groups with the other facets' filters applied. `now` (epoch ms)
   * places the age buckets.
   */
  async counts(filter: QueueFilter, now: number = nowMs()): Promise<QueueCounts> {
    const facets = new Set(['tool', 'approver', 'age', 'status', 'via'])
    type Group = {
      tool: string
      approver: string
      status: string
      via: string
      age: AgeBucket
      n: number
    }
    const groups: Group[] = []
    for (const kind of ITEM_KINDS) {
      const client = this.rows.client
      const query = this.#where(client.from(this.rows.items(kind)), kind, filter, facets)
      const rows = await query
        .select(
          client.raw(
            `${kind === 'approval' ? 'tool_name' : '?'} as tool, approver, status, decided_via as via, case when created_at >= ? then 'lt1h' when created_at >= ? then '1h-1d' else 'gt1d' end as age, count(*) as n`,
            [...(kind === 'approval' ? [] : [QUESTION_SET]), now - HOUR, now - 24 * HOUR]
          )
        )
        .groupByRaw('1, 2, 3, 4, 5')
      for (const row of rows as any[]) {
        groups.push({
          tool: String(row.tool),
          approver: String(row.approver),
          status: String(row.status),
          via: String(row.via ?? ''),
          age: row.age as AgeBucket,
          n: Number(row.n),
        })
      }
    }
    const fits = (group: Group, except: string) =>
      (except === 'tool' || filter.tool === undefined || group.tool === filter.tool) &&
      (except === 'approver' ||
        filter.approver === undefined ||
        group.approver === filter.approver) &&
      (except === 'age' || filter.age === undefined || group.age === filter.age) &&
      (except === 'status' || filter.status === undefined || group.status === filter.status) &&
      (except === 'via' || filter.via === undefined || group.via === filter.via)
    const facet = (name: 'tool' | 'approver' | 'status' | 'via') => {
      const sum = new Map<string, number>()
      for (const group of groups) {
        if (fits(group, name)) sum.set(group[name], (sum.get(group[name]) ?? 0) + group.n)
      }
      return [...sum].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, FACET_VALUES)
    }
    const age = { lt1h: 0, h1to1d: 0, gt1d: 0 }
    let total = 0
    for (const group of groups) {
      if (fits(group, 'age')) {
        if (group.age === 'lt1h') age.lt1h += group.n
        else if (group.age === '1h-1d') age.h1to1d += group.n
        else age.gt1d += group.n
      }
      if (fits(group, '')) total += group.n
    }
    return {
      total,
      tool: facet('tool'),
      approver: facet('approver'),
      status: filter.view === 'decided' ? facet('status') : [],
      via: filter.view === 'decided' ? facet('via') : [],
      age,
    }
  }

  /**
   * The queue's fingerprint: pending items, the newest asked, the newest decided (each an
   * index read). Any park or decision changes it.
   */
  async watermark(): Promise<QueueWatermark> {
    const out: QueueWatermark = { pending: 0, newestAsked: 0, newestDecided: 0 }
    for (const kind of ITEM_KINDS) {
      const table = this.rows.items(kind)
      const pending = await this.rows.client
        .from(table)
        .where('status', 'pending')
        .count('* as n')
        .max('created_at as m')
        .first()
      const decided = await this.rows.client.from(table).max('decided_at as m').first()
      out.pending += Number(pending?.n ?? 0)
      out.newestAsked = Math.max(out.newestAsked, Number(pending?.m ?? 0))
      out.newestDecided = Math.max(out.newestDecided, Number(decided?.m ?? 0))
    }
    return out
  }
}

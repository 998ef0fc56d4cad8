import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { DateTime } from 'luxon'
import type { ElicitationRequest } from '../core/frames.js'
import type { Principal } from '../core/run.js'
import type { TableNames } from '../store/schema.js'
import type { ItemStatus, ParkedItem, SettledItem } from './types.js'

/** What a person is asked: a tool call to approve, or a question set to answer. */
export type ItemKind = 'approval' | 'elicitation'

/** Both item tables, in the order every multi-table read walks them. */
export const ITEM_KINDS = ['approval', 'elicitation'] as const

/**
 * The statuses of a stream's suspensions that are not done with: its current segment's (being
 * written, parked, or claimed for resuming). A stream has at most one such segment: the next
 * one starts only once every run that parked in it was resumed together.
 */
export const LIVE = ['open', 'parked', 'claimed']

/** A parked item's stored row, parsed. Times are epoch milliseconds. */
export interface ItemRow {
  kind: ItemKind
  runId: string
  park: number
  itemId: string
  streamRunId: string
  /** Position of the frame that asked, in the stream. */
  streamSeq: number
  threadId: string
  approver: string
  principal: Principal | null
  expiresAt: number | null
  status: ItemStatus
  createdAt: number
  toolName?: string
  input?: unknown
  request?: ElicitationRequest
}

/**
 * A segment once claimed: what `resume` needs. `runId` is who resumes: the run that parked, or,
 * when several runs parked in the segment, the run whose segment it was.
 */
export interface ClaimedSuspension {
  runId: string
  /** The first parked run's park (see `parks` for every one). */
  park: number
  /** Every run that parked in the segment, with its park. */
  parks: { runId: string; park: number }[]
  streamRunId: string
  threadId: string
  parentRunId: string | null
  principal: Principal | null
  checkpoint: unknown
  /** The run's input as it was started. */
  input: unknown
  items: SettledItem[]
  /** When the segment's last decision committed (database time, epoch ms): for its metrics. */
  decidedAt?: number
}

/** JSON text for a column (`undefined` stores SQL null). */
export const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value))

/** A JSON column's value, or null. */
export const parse = (value: string | null) =>
  value === null || value === undefined ? null : JSON.parse(value)

/**
 * The parking tables on one lazily opened Lucid client: what every part of the parking store
 * shares (the client is opened on first use, so a store made before the database is ready works).
 */
export class ParkingTables {
  #client: QueryClientContract | null = null

  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  get client(): QueryClientContract {
    this.#client ??= this.connect()
    return this.#client
  }

  /** The table an item kind is stored in. */
  items(kind: ItemKind) {
    return kind === 'approval' ? this.tables.approvals : this.tables.elicitations
  }

  /** Pending items matching `where` (column values), counted over both item tables. */
  async countPending(
    client: QueryClientContract | TransactionClientContract,
    where: Record<string, string | number>
  ) {
    let total = 0
    for (const kind of ITEM_KINDS) {
      const row = await client
        .from(this.items(kind))
        .where(where)
        .where('status', 'pending')
        .count('* as n')
        .first()
      total += Number(row.n)
    }
    return total
  }
}

/**
 * The one item lookup: an item's stored row at `park` or, without one, at its newest park. Both
 * tables are read: an item id is unique per run and park within one table, not across the two
 * (a run may ask approval `x` in one park and question set `x` in a later one), so the newest
 * park across both wins; within one park, the first kind of {@link ITEM_KINDS} (the approval).
 * Returns the row's kind and the row as stored (each reader parses what it serves), or null.
 */
export async function findItemRow(
  rows: ParkingTables,
  runId: string,
  itemId: string,
  park?: number
): Promise<{ kind: ItemKind; row: Record<string, any> } | null> {
  let found: { kind: ItemKind; row: Record<string, any> } | null = null
  for (const kind of ITEM_KINDS) {
    const query = rows.client
      .from(rows.items(kind))
      .where('run_id', runId)
      .where('item_id', itemId)
      .orderBy('park', 'desc')
    if (park !== undefined) query.where('park', park)
    const row = await query.first()
    if (row && (!found || Number(row.park) > Number(found.row.park))) found = { kind, row }
  }
  return found
}

/** An item row as stored (snake_case, JSON text) parsed into an {@link ItemRow}. */
export function toItem(kind: ItemKind, row: Record<string, any>): ItemRow {
  return {
    kind,
    runId: row.run_id,
    park: Number(row.park),
    itemId: row.item_id,
    streamRunId: row.stream_run_id,
    streamSeq: Number(row.stream_seq),
    threadId: row.thread_id,
    approver: row.approver,
    principal: parse(row.principal),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    status: row.status,
    createdAt: Number(row.created_at),
    ...(kind === 'approval'
      ? { toolName: row.tool_name, input: parse(row.input) }
      : { request: parse(row.request) }),
  }
}

/** An item as a person sees it (a {@link ParkedItem}): ISO times, no checkpoint, no principal. */
export function toParkedItem(item: ItemRow, row: Record<string, any>): ParkedItem {
  const iso = (ms: number) => DateTime.fromMillis(ms).toUTC().toISO()!
  return {
    kind: item.kind,
    runId: item.runId,
    itemId: item.itemId,
    park: item.park,
    streamRunId: item.streamRunId,
    streamSeq: item.streamSeq,
    threadId: item.threadId,
    approver: item.approver,
    requesterId: item.principal?.id ?? null,
    expiresAt: item.expiresAt === null ? null : iso(item.expiresAt),
    createdAt: iso(item.createdAt),
    status: item.status,
    ...(item.kind === 'approval'
      ? {
          toolName: item.toolName,
          input: item.input,
          confirmation: parse(row.confirmation),
          ...(row.edited_input !== null && row.edited_input !== undefined
            ? { editedInput: parse(row.edited_input) }
            : {}),
        }
      : { request: item.request }),
    decidedBy: row.decided_by,
    decidedVia: row.decided_via,
    reason: row.reason,
    decidedAt:
      row.decided_at === null || row.decided_at === undefined ? null : iso(Number(row.decided_at)),
  }
}

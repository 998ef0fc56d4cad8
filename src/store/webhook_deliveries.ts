import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { affectedRows, nowMs } from './sql.js'

/** A delivery's state: waiting for (another) attempt, delivered, or given up on. */
export type DeliveryStatus = 'pending' | 'delivered' | 'dead'

/** A row to write into the outbox (in the transaction of the change it reports). */
export interface NewDelivery {
  id: string
  eventType: string
  endpoint: string
  streamRunId: string
  runId: string
  payload: string
}

/** Whose due rows a deliverer's lane reads: one endpoint's, or every endpoint's but some. */
export type DueLane = { endpoint: string } | { except: readonly string[] }

/** A stored delivery, as the deliverer, the console and `inspect` read it. */
export interface DeliveryRow {
  id: string
  eventType: string
  endpoint: string
  streamRunId: string
  runId: string
  payload: string
  status: DeliveryStatus
  attempts: number
  nextAttemptAt: number
  lastError: string | null
  createdAt: number
  deliveredAt: number | null
}

/** An item of a park as the outbox names it (never its input, question or reply). */
export interface ParkItemRow {
  runId: string
  park: number
  itemId: string
  kind: 'approval' | 'elicitation'
  toolName?: string
  approver: string
  expiresAt: number | null
}

function toRow(row: any): DeliveryRow {
  return {
    id: row.id,
    eventType: row.event_type,
    endpoint: row.endpoint,
    streamRunId: row.stream_run_id,
    runId: row.run_id,
    payload: row.payload,
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    lastError: row.last_error ?? null,
    createdAt: Number(row.created_at),
    deliveredAt: row.delivered_at === null ? null : Number(row.delivered_at),
  }
}

/** Write outbox rows inside `trx` (they commit, or roll back, with the change they report). */
export async function insertDeliveries(
  trx: TransactionClientContract,
  tables: TableNames,
  rows: NewDelivery[]
) {
  if (rows.length === 0) return
  const now = nowMs()
  await trx.table(tables.webhookDeliveries).multiInsert(
    rows.map((row) => ({
      id: row.id,
      event_type: row.eventType,
      endpoint: row.endpoint,
      stream_run_id: row.streamRunId,
      run_id: row.runId,
      payload: row.payload,
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    }))
  )
}

/** The thread of a stream, from its running segment's record (`null` when none is stored). */
export async function streamThread(
  trx: TransactionClientContract,
  tables: TableNames,
  streamRunId: string
): Promise<string | null> {
  const row = await trx.from(tables.streams).select('segment').where('run_id', streamRunId).first()
  try {
    return row?.segment ? (JSON.parse(row.segment).meta?.threadId ?? null) : null
  } catch {
    return null
  }
}

/**
 * The items still waiting of the parks `parks` of stream `streamRunId`, read inside `trx`, in
 * stream order. One decided before its park committed (the segment was still running) is not
 * named: its `run.decided` came first, and a pager must not open a page it already closed.
 */
export async function parkItems(
  trx: TransactionClientContract,
  tables: TableNames,
  streamRunId: string,
  parks: { runId: string; park: number }[]
): Promise<ParkItemRow[]> {
  if (parks.length === 0) return []
  const wanted = new Set(parks.map((p) => `${p.runId}\u0000${p.park}`))
  const items: (ParkItemRow & { seq: number })[] = []
  for (const kind of ['approval', 'elicitation'] as const) {
    const table = kind === 'approval' ? tables.approvals : tables.elicitations
    const columns = ['run_id', 'park', 'item_id', 'approver', 'expires_at', 'stream_seq']
    const rows = await trx
      .from(table)
      .select(kind === 'approval' ? [...columns, 'tool_name'] : columns)
      .where('stream_run_id', streamRunId)
      .where('status', 'pending')
      .whereIn(
        'park',
        parks.map((p) => p.park)
      )
    for (const row of rows) {
      if (!wanted.has(`${row.run_id}\u0000${row.park}`)) continue
      items.push({
        runId: row.run_id,
        park: Number(row.park),
        itemId: row.item_id,
        kind,
        ...(kind === 'approval' ? { toolName: row.tool_name } : {}),
        approver: row.approver,
        expiresAt: row.expires_at === null ? null : Number(row.expires_at),
        seq: Number(row.stream_seq),
      })
    }
  }
  return items.sort((a, b) => a.seq - b.seq).map(({ seq: _seq, ...item }) => item)
}

/**
 * The outbox's reads and writes for the deliverer, the console and `inspect`. Every time is the
 * database's (`nowMs`). A replica claims a row by compare-and-set on its lease (portable to
 * SQLite, PostgreSQL and MariaDB alike): the row is delivered by one replica at a time, and
 * again by another one only once that lease lapsed (a replica killed mid-delivery).
 */
export class WebhookDeliveries {
  constructor(
    readonly client: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  get #table() {
    return this.tables.webhookDeliveries
  }

  /**
   * Ids of up to `limit` rows due for an attempt now (pending, due, no lease held), of one
   * endpoint, or of every endpoint but `except` (default: any endpoint).
   */
  async due(limit: number, lane: DueLane = { except: [] }): Promise<string[]> {
    const now = nowMs()
    const query = this.client()
      .from(this.#table)
      .select('id')
      .where('status', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<', now))
    if ('endpoint' in lane) query.where('endpoint', lane.endpoint)
    else if (lane.except.length > 0) query.whereNotIn('endpoint', [...lane.except])
    const rows = await query.orderBy('next_attempt_at', 'asc').limit(limit)
    return rows.map((row: { id: string }) => row.id)
  }

  /**
   * Claim row `id` for `holder` for `leaseMs` (one attempt more counted), if it is still due and
   * nobody's lease holds. Returns the row claimed, or `null` (another replica won).
   */
  async claim(id: string, holder: string, leaseMs: number): Promise<DeliveryRow | null> {
    const now = nowMs()
    const won = affectedRows(
      await this.client()
        .from(this.#table)
        .where('id', id)
        .where('status', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<', now))
        .update({
          lease_holder: holder,
          lease_expires_at: now + leaseMs,
          attempts: this.client().raw('attempts + 1'),
          updated_at: now,
        })
    )
    if (won !== 1) return null
    return this.find(id)
  }

  /** Record an attempt's success, if `holder` still holds the row. */
  async delivered(id: string, holder: string) {
    const now = nowMs()
    await this.#settle(id, holder, {
      status: 'delivered',
      delivered_at: now,
      last_error: null,
      updated_at: now,
    })
  }

  /**
   * Record an attempt's failure (`error`, a stable code), if `holder` still holds the row: due
   * again after `retryInMs`, or `dead` when `retryInMs` is `null`.
   */
  async failed(id: string, holder: string, error: string, retryInMs: number | null) {
    const now = nowMs()
    await this.#settle(id, holder, {
      status: retryInMs === null ? 'dead' : 'pending',
      next_attempt_at: now + (retryInMs ?? 0),
      last_error: error.slice(0, 64),
      updated_at: now,
    })
  }

  async #settle(id: string, holder: string, update: Record<string, unknown>) {
    await this.client()
      .from(this.#table)
      .where('id', id)
      .where('lease_holder', holder)
      .where('status', 'pending')
      .update({ ...update, lease_holder: null, lease_expires_at: null })
  }

  /** One delivery, or `null`. */
  async find(id: string): Promise<DeliveryRow | null> {
    const row = await this.client().from(this.#table).where('id', id).first()
    return row ? toRow(row) : null
  }

  /** Every delivery of a stream's runs, oldest first. */
  async forStream(streamRunId: string): Promise<DeliveryRow[]> {
    const rows = await this.client()
      .from(this.#table)
      .where('stream_run_id', streamRunId)
      .orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ])
    return rows.map(toRow)
  }

  /** Up to `limit` dead deliveries, newest first. */
  async dead(limit: number): Promise<DeliveryRow[]> {
    const rows = await this.client()
      .from(this.#table)
      .where('status', 'dead')
      .orderBy([
        { column: 'updated_at', order: 'desc' },
        { column: 'id', order: 'asc' },
      ])
      .limit(limit)
    return rows.map(toRow)
  }

  /** Make a dead delivery due again now, its attempts counted from zero. Returns whether it was dead. */
  async retry(id: string): Promise<boolean> {
    const now = nowMs()
    const changed = affectedRows(
      await this.client()
        .from(this.#table)
        .where('id', id)
        .where('status', 'dead')
        .update({ status: 'pending', attempts: 0, next_attempt_at: now, updated_at: now })
    )
    return changed === 1
  }

  /** Delete up to `limit` rows delivered before `before`. Returns how many. */
  async purgeDelivered(before: number, limit: number): Promise<number> {
    const ids = await this.client()
      .from(this.#table)
      .select('id')
      .where('status', 'delivered')
      .where('delivered_at', '<', before)
      .limit(limit)
    if (ids.length === 0) return 0
    return affectedRows(
      await this.client()
        .from(this.#table)
        .whereIn(
          'id',
          ids.map((row: { id: string }) => row.id)
        )
        .delete()
    )
  }
}

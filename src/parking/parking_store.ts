import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { DateTime } from 'luxon'
import type { ElicitationRequest, StreamFrame } from '../core/frames.js'
import type { TableNames } from '../store/schema.js'
import { affectedRows as affected, nowMs as now } from '../store/sql.js'
import type { ItemStatus, PendingItem, SettledItem } from './types.js'
import type { Principal, RunMeta } from '../core/run.js'
import { DEFAULTS } from '../defaults.js'

type ParkFrame = Extract<StreamFrame, { t: 'approval' | 'elicitation' }>
export type ItemKind = 'approval' | 'elicitation'

/** A parked item's stored row, parsed. */
export interface ItemRow {
  kind: ItemKind
  runId: string
  park: number
  itemId: string
  streamRunId: string
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

/** A suspension once claimed: what `resume` needs. */
export interface ClaimedSuspension {
  runId: string
  park: number
  streamRunId: string
  threadId: string
  parentRunId: string | null
  principal: Principal | null
  checkpoint: unknown
  /** The run's input as it was started. */
  input: unknown
  items: SettledItem[]
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value))
const parse = (value: string | null) =>
  value === null || value === undefined ? null : JSON.parse(value)

/**
 * The SQL side of parking, through Lucid. Writes that touch a stream run inside that stream's
 * commit (its row lock serializes them), so a park, a decision and the frames they write commit
 * together or not at all.
 */
export class ParkingStore {
  #client: QueryClientContract | null = null

  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  get client(): QueryClientContract {
    this.#client ??= this.connect()
    return this.#client
  }

  #table(kind: ItemKind) {
    return kind === 'approval' ? this.tables.approvals : this.tables.elicitations
  }

  /**
   * Park: insert the item's row and, when the parked run has no open suspension, a new one. Runs
   * inside the stream commit that stores the frame (DESIGN.md invariant 6).
   */
  async park(trx: TransactionClientContract, meta: RunMeta, frame: ParkFrame, seq: number) {
    const at = now()
    const parkedRunId = frame.runId
    const latest = await trx
      .from(this.tables.suspensions)
      .select('park', 'status')
      .where('run_id', parkedRunId)
      .orderBy('park', 'desc')
      .first()
    let park: number
    if (latest && latest.status === 'open') {
      park = Number(latest.park)
    } else {
      park = latest ? Number(latest.park) + 1 : 1
      const child = parkedRunId !== meta.runId
      await trx
        .insertQuery()
        .table(this.tables.suspensions)
        .insert({
          run_id: parkedRunId,
          park,
          stream_run_id: meta.streamRunId,
          thread_id: meta.threadId,
          // A frame forwarded for another run: the writer's run is its parent.
          parent_run_id: child ? meta.runId : meta.parentRunId,
          principal: json(meta.principal),
          checkpoint: null,
          status: 'open',
          attempts: 0,
          created_at: at,
          updated_at: at,
        })
    }
    const common = {
      run_id: parkedRunId,
      park,
      item_id: frame.id,
      stream_run_id: meta.streamRunId,
      thread_id: meta.threadId,
      stream_seq: seq,
      approver: (frame.t === 'approval' ? frame.approver : undefined) ?? 'requester',
      principal: json(meta.principal),
      expires_at:
        frame.t === 'approval' && frame.expiresAt
          ? DateTime.fromISO(frame.expiresAt).toMillis()
          : null,
      status: 'pending',
      created_at: at,
    }
    if (frame.t === 'approval') {
      await trx
        .insertQuery()
        .table(this.tables.approvals)
        .insert({
          ...common,
          tool_name: frame.toolName,
          input: json(frame.input ?? null),
          confirmation: json(frame.confirmation ?? null),
          target: json(frame.target ?? null),
        })
    } else {
      await trx
        .insertQuery()
        .table(this.tables.elicitations)
        .insert({
          ...common,
          request: json(frame.request),
        })
    }
  }

  /** Whether the stream has suspensions being written (the segment wrote approvals/elicitations). */
  async hasOpen(streamRunId: string) {
    const row = await this.client
      .from(this.tables.suspensions)
      .select('run_id')
      .where('stream_run_id', streamRunId)
      .where('status', 'open')
      .first()
    return Boolean(row)
  }

  /**
   * Suspensions still `open` whose stream is no longer open: their segment died (a crash, a
   * lapsed lease) before it could park. They can never resume: abandon them.
   */
  async abandonOrphans(limit: number = DEFAULTS.sweepBatch) {
    const rows = await this.client
      .from(this.tables.suspensions)
      .select('stream_run_id')
      .where('status', 'open')
      .whereNotExists((q) =>
        q
          .from(this.tables.streams)
          .whereRaw(`${this.tables.streams}.run_id = ${this.tables.suspensions}.stream_run_id`)
          .where(`${this.tables.streams}.status`, 'open')
      )
      .limit(limit)
    const streams = [...new Set(rows.map((row: { stream_run_id: string }) => row.stream_run_id))]
    for (const stream of streams) await this.abandon(stream as string)
    return streams.length
  }

  /** The run ended a segment parked: store the checkpoint on the stream's open suspensions. */
  async parked(
    client: QueryClientContract | TransactionClientContract,
    streamRunId: string,
    checkpoint: unknown,
    input: unknown
  ): Promise<{ runId: string; park: number }[]> {
    const open = await client
      .from(this.tables.suspensions)
      .select('run_id', 'park')
      .where('stream_run_id', streamRunId)
      .where('status', 'open')
    if (open.length === 0) return []
    await client
      .from(this.tables.suspensions)
      .where('stream_run_id', streamRunId)
      .where('status', 'open')
      .update({
        status: 'parked',
        checkpoint: json(checkpoint ?? null),
        input: json(input ?? null),
        updated_at: now(),
      })
    return open.map((row: { run_id: string; park: unknown }) => ({
      runId: row.run_id,
      park: Number(row.park),
    }))
  }

  /** The run ended without parking: its open suspensions are abandoned, their items cancelled. */
  async abandon(streamRunId: string) {
    const open = await this.client
      .from(this.tables.suspensions)
      .select('run_id', 'park')
      .where('stream_run_id', streamRunId)
      .where('status', 'open')
    for (const row of open) {
      for (const kind of ['approval', 'elicitation'] as const) {
        await this.client
          .from(this.#table(kind))
          .where('run_id', row.run_id)
          .where('park', row.park)
          .where('status', 'pending')
          .update({ status: 'cancelled', decided_via: 'system', decided_at: now() })
      }
      await this.client
        .from(this.tables.suspensions)
        .where('run_id', row.run_id)
        .where('park', row.park)
        .where('status', 'open')
        .update({ status: 'abandoned', updated_at: now() })
    }
  }

  /** An item's row at `park`, or its newest park, from either table. */
  async findItem(runId: string, itemId: string, park?: number): Promise<ItemRow | null> {
    for (const kind of ['approval', 'elicitation'] as const) {
      const query = this.client
        .from(this.#table(kind))
        .where('run_id', runId)
        .where('item_id', itemId)
        .orderBy('park', 'desc')
      if (park !== undefined) query.where('park', park)
      const row = await query.first()
      if (row) return toItem(kind, row)
    }
    return null
  }

  /**
   * Settle one item if it is still pending (and, unless `expired`, not past its expiry).
   * Returns whether this call won.
   */
  async settle(
    trx: TransactionClientContract,
    item: ItemRow,
    outcome: {
      status: Exclude<ItemStatus, 'pending'>
      decidedBy: string | null
      decidedVia: string
      reason?: string | null
      editedInput?: unknown
      reply?: { answers: Record<string, string[]>; skipped: boolean }
    }
  ): Promise<boolean> {
    const at = now()
    const query = trx
      .from(this.#table(item.kind))
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

  /** The status of a suspension, or null. */
  async suspensionStatus(runId: string, park: number): Promise<string | null> {
    const row = await this.client
      .from(this.tables.suspensions)
      .select('status')
      .where('run_id', runId)
      .where('park', park)
      .first()
    return row ? row.status : null
  }

  /** The newest parked suspension inside a stream (a child's, when the stream's run delegated). */
  async parkedInStream(streamRunId: string) {
    const row = await this.client
      .from(this.tables.suspensions)
      .where('stream_run_id', streamRunId)
      .where('status', 'parked')
      .orderBy('updated_at', 'desc')
      .first()
    return row ? this.latestSuspension(row.run_id) : null
  }

  /** The newest suspension inside a stream, whatever its status (`{ runId, park, status }`). */
  async newestInStream(streamRunId: string) {
    const row = await this.client
      .from(this.tables.suspensions)
      .select('run_id', 'park', 'status')
      .where('stream_run_id', streamRunId)
      .orderBy('updated_at', 'desc')
      .orderBy('park', 'desc')
      .first()
    return row
      ? { runId: row.run_id as string, park: Number(row.park), status: row.status as string }
      : null
  }

  /** The run's newest suspension, whatever its status. */
  async latestSuspension(runId: string) {
    const row = await this.client
      .from(this.tables.suspensions)
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

  /** Pending items of one park, counted over both tables. */
  async pendingCount(
    client: QueryClientContract | TransactionClientContract,
    runId: string,
    park: number
  ) {
    let total = 0
    for (const kind of ['approval', 'elicitation'] as const) {
      const row = await client
        .from(this.#table(kind))
        .where('run_id', runId)
        .where('park', park)
        .where('status', 'pending')
        .count('* as n')
        .first()
      total += Number(row.n)
    }
    return total
  }

  /**
   * Cancel a parked run: every pending item of its suspension, and the suspension. Inside the
   * stream commit. Returns false (nothing changed) when nothing is pending any more: the run is
   * already resuming (or was decided), so the cancel lost.
   */
  async cancel(trx: TransactionClientContract, runId: string, park: number, by: string | null) {
    if ((await this.pendingCount(trx, runId, park)) === 0) return false
    const at = now()
    const done = await trx
      .from(this.tables.suspensions)
      .where('run_id', runId)
      .where('park', park)
      .whereIn('status', ['open', 'parked'])
      .update({ status: 'cancelled', updated_at: at })
    if (affected(done) !== 1) return false
    for (const kind of ['approval', 'elicitation'] as const) {
      await trx
        .from(this.#table(kind))
        .where('run_id', runId)
        .where('park', park)
        .where('status', 'pending')
        .update({ status: 'cancelled', decided_by: by, decided_via: 'cancel', decided_at: at })
    }
    return true
  }

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
    const trx = await this.client.transaction()
    try {
      const at = now()
      const locked = await trx
        .from(this.tables.suspensions)
        .where('run_id', runId)
        .where('park', park)
        .where((q) =>
          q
            .where('status', 'parked')
            .orWhere((c) => c.where('status', 'claimed').where('claim_expires_at', '<', at))
        )
        .update({ updated_at: at })
      if (affected(locked) !== 1 || (await this.pendingCount(trx, runId, park)) > 0) {
        await trx.rollback()
        return null
      }
      await trx
        .from(this.tables.suspensions)
        .where('run_id', runId)
        .where('park', park)
        .update({
          status: 'claimed',
          claimed_by: claimer,
          claim_expires_at: at + leaseMs,
          attempts: trx.raw('attempts + 1'),
        })
      const row = await trx
        .from(this.tables.suspensions)
        .where('run_id', runId)
        .where('park', park)
        .first()
      const items = await this.#settledItems(trx, runId, park)
      await trx.commit()
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
      await trx.rollback()
      throw error
    }
  }

  /** The claimer started the resume: the suspension is done with (the stream's lease takes over). */
  async markResumed(runId: string, park: number, claimer: string) {
    const done = await this.client
      .from(this.tables.suspensions)
      .where('run_id', runId)
      .where('park', park)
      .where('status', 'claimed')
      .where('claimed_by', claimer)
      .update({ status: 'resumed', updated_at: now() })
    return affected(done) === 1
  }

  /** Pending items past their expiry, oldest first. */
  async lapsed(limit: number): Promise<ItemRow[]> {
    const out: ItemRow[] = []
    for (const kind of ['approval', 'elicitation'] as const) {
      const rows = await this.client
        .from(this.#table(kind))
        .where('status', 'pending')
        .whereNotNull('expires_at')
        .where('expires_at', '<', now())
        .orderBy('expires_at', 'asc')
        .limit(limit)
      out.push(...rows.map((row: Record<string, any>) => toItem(kind, row)))
    }
    return out
  }

  /** Suspensions that may be claimable: parked, or claimed with a lapsed claim. */
  async claimCandidates(limit: number): Promise<{ runId: string; park: number }[]> {
    const s = this.tables.suspensions
    const pending = (table: string) => (q: any) =>
      q
        .from(table)
        .whereRaw(`${table}.run_id = ${s}.run_id and ${table}.park = ${s}.park`)
        .where(`${table}.status`, 'pending')
    const rows = await this.client
      .from(s)
      .select('run_id', 'park')
      // Only those nothing is pending on: the rest wait for a person, however many there are.
      .whereNotExists(pending(this.tables.approvals))
      .whereNotExists(pending(this.tables.elicitations))
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

  /**
   * Items for a person: newest first, filtered, paged (`page` from 1). Never the checkpoint or
   * the stored principal.
   */
  async list(filter: {
    status?: 'pending' | 'decided'
    threadId?: string
    runId?: string
    streamRunId?: string
    page: number
    perPage: number
  }): Promise<PendingItem[]> {
    const items: PendingItem[] = []
    const limit = Math.min(filter.page, 1000) * filter.perPage
    for (const kind of ['approval', 'elicitation'] as const) {
      const query = this.client
        .from(this.#table(kind))
        .orderBy('created_at', 'desc')
        .orderBy('run_id', 'asc')
        .orderBy('item_id', 'asc')
        .limit(limit)
      if (filter.status === 'decided') query.whereNot('status', 'pending')
      else query.where('status', 'pending')
      if (filter.threadId) query.where('thread_id', filter.threadId)
      if (filter.runId) query.where('run_id', filter.runId)
      if (filter.streamRunId) query.where('stream_run_id', filter.streamRunId)
      for (const row of await query) items.push(toPending(toItem(kind, row), row))
    }
    const key = (i: PendingItem) => `${i.runId}\u0000${i.itemId}`
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
    return items.slice((filter.page - 1) * filter.perPage, limit)
  }

  async #settledItems(
    trx: TransactionClientContract,
    runId: string,
    park: number
  ): Promise<SettledItem[]> {
    const items: SettledItem[] = []
    for (const kind of ['approval', 'elicitation'] as const) {
      const rows = await trx
        .from(this.#table(kind))
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

function toItem(kind: ItemKind, row: Record<string, any>): ItemRow {
  return {
    kind,
    runId: row.run_id,
    park: Number(row.park),
    itemId: row.item_id,
    streamRunId: row.stream_run_id,
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

function toPending(item: ItemRow, row: Record<string, any>): PendingItem {
  const iso = (ms: number) => DateTime.fromMillis(ms).toUTC().toISO()!
  return {
    kind: item.kind,
    runId: item.runId,
    itemId: item.itemId,
    park: item.park,
    streamRunId: item.streamRunId,
    streamSeq: Number(row.stream_seq),
    threadId: item.threadId,
    approver: item.approver,
    requesterId: item.principal?.id ?? null,
    expiresAt: item.expiresAt === null ? null : iso(item.expiresAt),
    createdAt: iso(item.createdAt),
    status: item.status,
    ...(item.kind === 'approval'
      ? { toolName: item.toolName, input: item.input, confirmation: parse(row.confirmation) }
      : { request: item.request }),
    decidedBy: row.decided_by,
    decidedVia: row.decided_via,
    reason: row.reason,
  }
}

import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { nowMs } from './sql.js'
import { int } from './rows.js'
import { notifiedTransaction, type WakeUps } from './wake_ups.js'

/** A stream of the write path as stored: its streams row's head and its metadata row. */
export interface DurableRecord {
  runId: string
  path: string
  contentType: string
  ttlSeconds: number | null
  expiresAtText: string | null
  /** Epoch ms, or null for never. */
  expiresAt: number | null
  closed: boolean
  /** `id epoch seq` of the producer whose append closed it. */
  closedBy: string | null
  lastStreamSeq: string | null
  forkSource: string | null
  forkSeq: number | null
  forkSubOffset: number | null
  softDeleted: boolean
  owner: string | null
  /** The last append's seq (0: none). */
  lastSeq: number
  rev: number
}

/** One append as stored: its seq and body (a JSON array, or base64). */
export interface DataRow {
  seq: number
  body: string
}

/** What a new stream's metadata row says (its head starts empty). */
export type NewDurable = Omit<
  DurableRecord,
  'lastSeq' | 'rev' | 'softDeleted' | 'closedBy' | 'lastStreamSeq'
>

const META_COLUMNS = [
  'm.run_id',
  'm.path',
  'm.content_type',
  'm.ttl_seconds',
  'm.expires_at_text',
  'm.expires_at',
  'm.closed',
  'm.closed_by',
  'm.last_stream_seq',
  'm.fork_source',
  'm.fork_seq',
  'm.fork_sub_offset',
  'm.soft_deleted',
  'm.owner',
  's.last_seq',
  's.rev',
]

const bool = (value: unknown) => value === true || value === 1 || value === '1'
const intOrNull = (value: unknown) => (value === null || value === undefined ? null : int(value))

function toRecord(row: Record<string, unknown>): DurableRecord {
  return {
    runId: String(row.run_id),
    path: String(row.path),
    contentType: String(row.content_type),
    ttlSeconds: intOrNull(row.ttl_seconds),
    expiresAtText: (row.expires_at_text as string | null) ?? null,
    expiresAt: intOrNull(row.expires_at),
    closed: bool(row.closed),
    closedBy: (row.closed_by as string | null) ?? null,
    lastStreamSeq: (row.last_stream_seq as string | null) ?? null,
    forkSource: (row.fork_source as string | null) ?? null,
    forkSeq: intOrNull(row.fork_seq),
    forkSubOffset: intOrNull(row.fork_sub_offset),
    softDeleted: bool(row.soft_deleted),
    owner: (row.owner as string | null) ?? null,
    lastSeq: int(row.last_seq),
    rev: int(row.rev),
  }
}

/**
 * The SQL of the Durable Streams write path, through Lucid: a stream is a row of the streams
 * table plus its metadata row, each append one `data` row of the frames table. Every write is
 * one transaction that locks the stream's row first, so appends of one stream serialize across processes, and wakes the stream's readers
 * (PostgreSQL NOTIFY in the transaction, `committed` after it: the sink's notifiers).
 */
export class DurableStore {
  constructor(
    readonly client: () => QueryClientContract,
    readonly tables: TableNames,
    readonly wakeUps: WakeUps
  ) {}

  #query(client: QueryClientContract | TransactionClientContract) {
    return client
      .from(`${this.tables.durableStreams} as m`)
      .join(`${this.tables.streams} as s`, 's.run_id', 'm.run_id')
      .select(META_COLUMNS)
  }

  /** The stream `runId`, or null when there is none. */
  async find(runId: string): Promise<DurableRecord | null> {
    const row = await this.#query(this.client()).where('m.run_id', runId).first()
    return row ? toRecord(row) : null
  }

  /**
   * Every stream of `owner` (`null`: anonymous) whose path starts with `prefix` that is neither
   * soft-deleted nor expired at `now`, with its last seq (a subscription pattern's backfill), in
   * path order.
   */
  async live(
    prefix: string,
    owner: string | null,
    now = nowMs()
  ): Promise<{ path: string; lastSeq: number }[]> {
    const rows = await this.client()
      .from(`${this.tables.durableStreams} as m`)
      .join(`${this.tables.streams} as s`, 's.run_id', 'm.run_id')
      .where((q) => (owner === null ? q.whereNull('m.owner') : q.where('m.owner', owner)))
      .where('m.soft_deleted', false)
      .where((q) => q.whereNull('m.expires_at').orWhere('m.expires_at', '>', now))
      .orderBy('m.path')
      .select('m.path', 's.last_seq')
    return rows
      .map((row: Record<string, unknown>) => ({
        path: String(row.path),
        lastSeq: int(row.last_seq),
      }))
      .filter((stream: { path: string }) => stream.path.startsWith(prefix))
  }

  /** The stream's head only (its last seq and rev), or null. */
  async head(runId: string): Promise<{ lastSeq: number; rev: number } | null> {
    const row = await this.client()
      .from(this.tables.streams)
      .where('run_id', runId)
      .select('last_seq', 'rev')
      .first()
    return row ? { lastSeq: int(row.last_seq), rev: int(row.rev) } : null
  }

  /** Up to `limit` appends after `afterSeq`, in order. */
  async rows(runId: string, afterSeq: number, limit: number): Promise<DataRow[]> {
    const rows = await this.client()
      .from(this.tables.frames)
      .where('run_id', runId)
      .where('kind', 'data')
      .where('seq', '>', afterSeq)
      .orderBy('seq', 'asc')
      .limit(limit)
      .select('seq', 'body')
    return rows.map((row) => ({ seq: int(row.seq), body: String(row.body) }))
  }

  /** One append, or null. */
  async row(runId: string, seq: number): Promise<DataRow | null> {
    const row = await this.client()
      .from(this.tables.frames)
      .where('run_id', runId)
      .where('seq', seq)
      .select('seq', 'body')
      .first()
    return row ? { seq: int(row.seq), body: String(row.body) } : null
  }

  /** Renew a sliding TTL (a read touched the stream). */
  async touch(runId: string, ttlSeconds: number) {
    await this.client()
      .from(this.tables.durableStreams)
      .where('run_id', runId)
      .update({ expires_at: nowMs() + ttlSeconds * 1000 })
  }

  /** Run `work` in one transaction that wakes the streams it changed. */
  transaction<T>(work: (tx: DurableTx) => Promise<T>): Promise<T> {
    return notifiedTransaction(this.client(), this.wakeUps, (trx, notify) =>
      work(new DurableTx(trx, this.tables, this.#query.bind(this), notify))
    )
  }
}

/** The writes of one transaction of {@link DurableStore}. */
export class DurableTx {
  constructor(
    readonly trx: TransactionClientContract,
    readonly tables: TableNames,
    readonly query: (client: TransactionClientContract) => ReturnType<QueryClientContract['from']>,
    readonly notify: (runId: string, rev?: number) => Promise<void>
  ) {}

  /**
   * Lock the stream's row (`SELECT ... FOR UPDATE`: a refusal after it leaves no trace) and read
   * it; null when there is none.
   */
  async lock(runId: string): Promise<DurableRecord | null> {
    const lock = this.trx.from(this.tables.streams).where('run_id', runId).select('run_id')
    // SQLite has no row locks: its write transactions are one at a time already.
    if (!this.trx.dialect.name.includes('sqlite')) lock.forUpdate()
    if (!(await lock.first())) return null
    const row = await this.query(this.trx).where('m.run_id', runId).first()
    return row ? toRecord(row) : null
  }

  /** Create a stream (its metadata, its streams row) with `bodies` as its first appends. */
  async create(record: NewDurable, bodies: string[]) {
    const at = nowMs()
    // A metadata row left by a purge of the stream's row: the path is free again. Deleted only
    // when there is one: a DELETE that finds no row locks the index gap where other new streams'
    // rows go (InnoDB), and concurrent creates then deadlock.
    for (const table of [this.tables.durableStreams, this.tables.durableProducers]) {
      const left = await this.trx.from(table).where('run_id', record.runId).select('run_id').first()
      if (left) await this.trx.from(table).where('run_id', record.runId).delete()
    }
    await this.trx.table(this.tables.streams).insert({
      run_id: record.runId,
      last_seq: 0,
      rev: 0,
      status: record.closed ? 'ended' : 'open',
      lease_expires_at: null,
      created_at: at,
      updated_at: at,
      ended_at: record.closed ? at : null,
    })
    await this.trx.table(this.tables.durableStreams).insert({
      run_id: record.runId,
      path: record.path,
      content_type: record.contentType,
      ttl_seconds: record.ttlSeconds,
      expires_at_text: record.expiresAtText,
      expires_at: record.expiresAt,
      closed: record.closed,
      fork_source: record.forkSource,
      fork_seq: record.forkSeq,
      fork_sub_offset: record.forkSubOffset,
      soft_deleted: false,
      owner: record.owner,
      created_at: at,
    })
    if (bodies.length > 0) await this.append(record.runId, 0, bodies)
  }

  /** Copy the appends of `from` up to `uptoSeq` into `to` (a fork's inherited data). */
  async copyRows(from: string, to: string, uptoSeq: number) {
    const rows = await this.trx
      .from(this.tables.frames)
      .where('run_id', from)
      .where('kind', 'data')
      .where('seq', '<=', uptoSeq)
      .orderBy('seq', 'asc')
      .select('seq', 'body')
    await this.#insertRows(
      to,
      rows.map((row) => ({ seq: int(row.seq), body: String(row.body) }))
    )
  }

  /** Insert rows at given seqs and move the stream's head to the last of them. */
  async #insertRows(runId: string, rows: DataRow[]) {
    if (rows.length === 0) return
    const at = nowMs()
    for (let index = 0; index < rows.length; index += 200) {
      await this.trx.table(this.tables.frames).multiInsert(
        rows.slice(index, index + 200).map((row) => ({
          run_id: runId,
          seq: row.seq,
          kind: 'data',
          body: row.body,
          component_id: null,
          superseded: false,
          commit_token: null,
          created_at: at,
        }))
      )
    }
    await this.trx
      .from(this.tables.streams)
      .where('run_id', runId)
      .update({ last_seq: rows.at(-1)!.seq, rev: this.trx.raw('rev + 1'), updated_at: at })
  }

  /** Append `bodies` after `lastSeq` (the locked head), one row each; returns the new last seq. */
  async append(runId: string, lastSeq: number, bodies: string[]): Promise<number> {
    await this.#insertRows(
      runId,
      bodies.map((body, index) => ({ seq: lastSeq + index + 1, body }))
    )
    await this.#wake(runId)
    return lastSeq + bodies.length
  }

  /** Change the stream's metadata (closure, `Stream-Seq`, expiry, soft deletion). */
  async update(runId: string, patch: Record<string, unknown>) {
    await this.trx.from(this.tables.durableStreams).where('run_id', runId).update(patch)
  }

  /** Close the stream: its metadata and its streams row (`ended`: the purge's to remove later). */
  async close(runId: string, closedBy: string | null) {
    const at = nowMs()
    await this.update(runId, { closed: true, closed_by: closedBy })
    await this.trx
      .from(this.tables.streams)
      .where('run_id', runId)
      .update({ status: 'ended', ended_at: at, rev: this.trx.raw('rev + 1'), updated_at: at })
    await this.#wake(runId)
  }

  /** A producer's state on the stream, or null. */
  async producer(
    runId: string,
    producerId: string
  ): Promise<{ epoch: number; lastSeq: number } | null> {
    const row = await this.trx
      .from(this.tables.durableProducers)
      .where('run_id', runId)
      .where('producer_id', producerId)
      .first()
    return row ? { epoch: int(row.epoch), lastSeq: int(row.last_seq) } : null
  }

  /** Record a producer's accepted append. */
  async setProducer(runId: string, producerId: string, epoch: number, lastSeq: number) {
    const at = nowMs()
    // Updated when it is there, else inserted (the stream's lock is held: no other writer of its
    // producers). Never an UPDATE that finds no row: on InnoDB it locks the gap where other
    // streams' producers go, and concurrent first appends then deadlock.
    if (await this.producer(runId, producerId)) {
      await this.trx
        .from(this.tables.durableProducers)
        .where('run_id', runId)
        .where('producer_id', producerId)
        .update({ epoch, last_seq: lastSeq, updated_at: at })
      return
    }
    await this.trx.table(this.tables.durableProducers).insert({
      run_id: runId,
      producer_id: producerId,
      epoch,
      last_seq: lastSeq,
      updated_at: at,
    })
  }

  /** Whether live (not hard-deleted) forks of `runId` remain. */
  async hasForks(runId: string): Promise<boolean> {
    const row = await this.trx
      .from(this.tables.durableStreams)
      .where('fork_source', runId)
      .select('run_id')
      .first()
    return Boolean(row)
  }

  /** Delete the stream and everything it owns; its readers are woken (they find it gone). */
  async remove(runId: string) {
    await this.trx.from(this.tables.frames).where('run_id', runId).delete()
    await this.trx.from(this.tables.durableProducers).where('run_id', runId).delete()
    await this.trx.from(this.tables.durableStreams).where('run_id', runId).delete()
    await this.trx.from(this.tables.streams).where('run_id', runId).delete()
    await this.notify(runId)
  }

  async #wake(runId: string) {
    const row = await this.trx
      .from(this.tables.streams)
      .where('run_id', runId)
      .select('rev')
      .first()
    await this.notify(runId, row ? int(row.rev) : undefined)
  }
}

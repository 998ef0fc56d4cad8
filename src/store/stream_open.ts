import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { affectedRows, insertedIgnoring, nowMs as now } from './sql.js'
import type { TableNames } from './schema.js'
import { int, toStreamState, type StreamState } from './rows.js'
import type { NotifiedWork } from './wake_ups.js'

/** What `StreamStore.open` throws for `only: 'new'` when the stream exists (nothing changed). */
export class StreamExistsError extends Error {
  constructor(readonly runId: string) {
    super('A stream of this run id exists')
  }
}

/** What an open gives: the last seq, the writer epoch, and the stream's row as the open left it. */
export interface OpenedStream {
  lastSeq: number
  epoch: number
  stream: StreamState
}

/** What an open needs of its store: the tables and a transaction that wakes other replicas. */
export interface OpenDeps {
  tables: TableNames
  transaction: <T>(work: NotifiedWork<T>) => Promise<T>
}

/** One open's arguments (see {@link openStream}). */
export interface OpenRequest {
  runId: string
  leaseMs: number
  within?: (trx: TransactionClientContract) => Promise<void>
  segment?: string | null
  only?: 'new'
}

type Notify = (runId: string, rev?: number) => Promise<void>

/** A new stream's row as inserted (no read: it is what was written). */
function inserted(at: number, leaseMs: number): OpenedStream {
  const stream: StreamState = {
    lastSeq: 0,
    rev: 1,
    status: 'open',
    leaseExpiresAt: at + leaseMs,
    createdAt: at,
  }
  // Epoch 0: the column's default (no replica took this stream over yet).
  return { lastSeq: 0, epoch: 0, stream }
}

/** The row a new stream starts with. */
function newRow(runId: string, at: number, leaseMs: number, segment: string | null | undefined) {
  return {
    run_id: runId,
    last_seq: 0,
    // As the first open always left it (each open moves the revision on).
    rev: 1,
    status: 'open',
    lease_expires_at: at + leaseMs,
    created_at: at,
    updated_at: at,
    ...(segment !== undefined ? { segment } : {}),
  }
}

/** What a reopen sets on the stream's row (its revision moves on; its sequence continues). */
function reopenedRow(
  trx: TransactionClientContract,
  at: number,
  leaseMs: number,
  segment: string | null | undefined
) {
  return {
    status: 'open',
    rev: trx.knexRawQuery('rev + 1'),
    lease_expires_at: at + leaseMs,
    updated_at: at,
    ended_at: null,
    ...(segment !== undefined ? { segment } : {}),
  }
}

/**
 * Create the stream, or reopen an ended or failed one (its sequence continues), in ONE
 * transaction: the row is inserted unless it exists (then it is reopened), `within` runs in
 * that transaction (a throw undoes the open, a new row too, and is rethrown), and other
 * replicas are woken. `segment` (JSON) records the segment that starts (what another replica
 * needs to continue it if this writer dies; `undefined` leaves the record as it is: a
 * delegated child's writer). `only: 'new'` creates a stream and never reopens one:
 * {@link StreamExistsError} (nothing changed) when it exists.
 *
 * A new stream costs its INSERT, what `within` writes, and PostgreSQL's NOTIFY: no read (its
 * row is what was inserted), no second write of its row.
 */
export function openStream(
  deps: OpenDeps,
  mysql: boolean,
  request: OpenRequest
): Promise<OpenedStream> {
  const at = now()
  const { runId, leaseMs, within, segment, only } = request
  if (mysql) return openMysql(deps, at, request)
  return deps.transaction(async (trx, notify) => {
    // Tried again when the row the insert found is gone before the reopen could lock it (a
    // purge held it and removed it): the stream is then a new one.
    for (;;) {
      const insert = trx
        .knexQuery()
        .table(deps.tables.streams)
        .insert(newRow(runId, at, leaseMs, segment))
        .onConflict('run_id')
        .ignore()
      if (await insertedIgnoring(trx, insert, 'run_id')) {
        if (within) await within(trx)
        await notify(runId, 1)
        return inserted(at, leaseMs)
      }
      if (only === 'new') throw new StreamExistsError(runId)
      const reopened = await reopen(deps, trx, notify, at, request)
      if (reopened) return reopened
    }
  })
}

/**
 * MySQL's open: `INSERT ... ON DUPLICATE KEY UPDATE` with the reopen's values, which takes the
 * row's exclusive lock at once whether it inserts or finds it (`INSERT IGNORE` takes a shared
 * one on a row found: two opens of one stream would both hold it and deadlock on the UPDATE).
 * `affectedRows` tells which: 1 inserted, 2 reopened (the revision always changes).
 */
function openMysql(deps: OpenDeps, at: number, request: OpenRequest): Promise<OpenedStream> {
  const { runId, leaseMs, within, segment, only } = request
  return deps.transaction(async (trx, notify) => {
    const { sql, bindings } = trx
      .knexQuery()
      .table(deps.tables.streams)
      .insert(newRow(runId, at, leaseMs, segment))
      .onConflict('run_id')
      .merge(reopenedRow(trx, at, leaseMs, segment) as any)
      .toSQL()
      .toNative()
    const result = await trx.rawQuery(sql, bindings as any[])
    if (Number(result?.[0]?.affectedRows ?? 0) === 1) {
      if (within) await within(trx)
      // No NOTIFY on MySQL: the wake-up is told once committed (Redis).
      await notify(runId, 1)
      return inserted(at, leaseMs)
    }
    if (only === 'new') throw new StreamExistsError(runId)
    if (within) await within(trx)
    return headAfterOpen(deps, trx, notify, runId)
  })
}

/**
 * Reopen an ended or failed stream (its sequence continues), then the caller's own writes;
 * `null` when the row is gone (a purge removed it while this waited on its lock).
 */
async function reopen(
  deps: OpenDeps,
  trx: TransactionClientContract,
  notify: Notify,
  at: number,
  request: OpenRequest
): Promise<OpenedStream | null> {
  const { runId, leaseMs, within, segment } = request
  const touched = await trx
    .from(deps.tables.streams)
    .where('run_id', runId)
    .update(reopenedRow(trx, at, leaseMs, segment))
  if (affectedRows(touched) === 0) return null
  // The caller's own writes (a resume marking its suspension resumed): all or nothing with
  // the reopen, which a throw here undoes.
  if (within) await within(trx)
  return headAfterOpen(deps, trx, notify, runId)
}

/** The stream's row as a reopen left it (read in its transaction), and the wake-up. */
async function headAfterOpen(
  deps: OpenDeps,
  trx: TransactionClientContract,
  notify: Notify,
  runId: string
): Promise<OpenedStream> {
  const row = await trx.from(deps.tables.streams).where('run_id', runId).first()
  const head = toStreamState(row)
  await notify(runId, head.rev)
  return { lastSeq: head.lastSeq, epoch: int(row.writer_epoch), stream: head }
}

import type { Knex } from 'knex'
import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { deleteStreamCheckpoints } from './checkpoint_rows.js'
import { affectedRows } from './sql.js'
import type { Candidate } from './purge_walk.js'

/**
 * What a purge removes, and how (the one place that knows which tables a stream owns).
 *
 * A stream owns its own row, its frames, its stored translator checkpoints, and every row of the
 * tables below that names it in `stream_run_id`: the parks of the run and of its sub-agents
 * (their rows carry the child's `run_id` but the stream's `stream_run_id`), their approvals and
 * question sets, the doors' run rows (AG-UI and useChat share them), and its webhook deliveries.
 */
export function streamOwnedTables(tables: TableNames): string[] {
  return [
    tables.approvals,
    tables.elicitations,
    tables.suspensions,
    tables.aguiRuns,
    tables.webhookDeliveries,
  ]
}

/** Suspension statuses that still wait for a person or a resume: their stream is never purged. */
const LIVE_SUSPENSIONS = ['open', 'parked', 'claimed']

/** Streams ended (or failed) before `endedBefore` with no live park: what a purge may remove. */
function duePurge(query: Knex.QueryBuilder, tables: TableNames, endedBefore: number) {
  const { streams, suspensions } = tables
  return query
    .whereIn(`${streams}.status`, ['ended', 'failed'])
    .where(`${streams}.ended_at`, '<', endedBefore)
    .whereNotExists((q) =>
      q
        .select(1)
        .from(suspensions)
        .whereRaw('?? = ??', [`${suspensions}.stream_run_id`, `${streams}.run_id`])
        .whereIn(`${suspensions}.status`, LIVE_SUSPENSIONS)
    )
}

/**
 * The earliest end of a stream ended before `endedBefore` (epoch ms), or null: where a purge's
 * walk starts (`PurgeWalk`). A `MIN` of the `ended_at` index.
 */
export async function firstEnded(
  client: QueryClientContract,
  tables: TableNames,
  endedBefore: number
): Promise<number | null> {
  const row = (await client
    .knexQuery()
    .from(tables.streams)
    .min({ first: 'ended_at' })
    .where('ended_at', '<', endedBefore)
    .first()) as { first: unknown } | undefined
  return row?.first === null || row?.first === undefined ? null : Number(row.first)
}

/**
 * The streams with `lo <= ended_at < hi` (except those of `skip` ended at `lo`), in `ended_at`
 * order, up to `limit`: the candidates of one batch of a purge's walk (`PurgeWalk`, which keeps
 * the window to about two batches, so this reads that many rows whatever the plan). The due
 * rule (ended or failed, no live park: {@link duePurge}) is the DELETE's, checked in the
 * statement that removes them; an open stream has no `ended_at` (a reopen clears it).
 */
export async function purgeWindow(
  client: QueryClientContract,
  tables: TableNames,
  window: { lo: number; hi: number; skip: string[] },
  limit: number
): Promise<Candidate[]> {
  const { lo, hi, skip } = window
  const query = client
    .knexQuery()
    .from(tables.streams)
    .select('run_id', 'ended_at')
    .where('ended_at', '>=', lo)
    .where('ended_at', '<', hi)
  if (skip.length > 0) {
    query.whereNot((q) => q.where('ended_at', lo).whereIn('run_id', skip))
  }
  const rows: { run_id: string; ended_at: unknown }[] = await query
    .orderBy('ended_at', 'asc')
    .limit(limit)
  return rows.map((row) => ({ runId: row.run_id, endedAt: Number(row.ended_at) }))
}

/**
 * How many streams a purge with this cutoff would remove now (see {@link duePurge}), and the
 * oldest one's end (epoch ms; null when none): one aggregate, no ids in memory.
 */
export async function countPurgeable(
  client: QueryClientContract,
  tables: TableNames,
  endedBefore: number
): Promise<{ due: number; oldestEndedAt: number | null }> {
  const query = client
    .knexQuery()
    .from(tables.streams)
    .count({ due: '*' })
    .min({ oldest: `${tables.streams}.ended_at` })
  const row = (await duePurge(query, tables, endedBefore).first()) as
    { due: unknown; oldest: unknown } | undefined
  const oldest = row?.oldest
  return {
    due: Number(row?.due ?? 0),
    oldestEndedAt: oldest === null || oldest === undefined ? null : Number(oldest),
  }
}

/**
 * Remove the streams among `runIds` that are still due and everything they own, inside `trx`:
 * the same few statements for the whole batch, whatever its size. The batch's stream rows are
 * locked first (`FOR UPDATE`, by primary key; SQLite's write transactions are one at a time
 * already) and the due rule checked on what they hold (ended or failed before `endedBefore`, no
 * live park, as {@link duePurge}): a reopen, a resume or a park needs that row, so none can
 * slip between the check and the delete, and one that came first is seen (kept). Every
 * statement finds its rows by the batch's ids alone (a primary key, an index), so no planner,
 * however stale its statistics, scans a table per batch. No row of an owned table is written
 * for a stream that is not open (a park, a resume and a door run all need it open, or absent
 * for a new run). `checkpoints: false` skips the checkpoints table (a schema before it).
 *
 * @returns the streams gone (removed here with their rows, or by a concurrent purge or close
 *   before the lock: their rows are not touched here), those kept (not due after all), how many THIS purge removed (what it counts, so two
 *   replicas purging at once never count a stream twice), whether the checkpoints table exists
 */
export async function purgeStreams(
  trx: TransactionClientContract,
  tables: TableNames,
  runIds: string[],
  endedBefore: number,
  checkpoints: boolean
): Promise<{ removed: string[]; kept: Set<string>; deleted: number; checkpoints: boolean }> {
  if (runIds.length === 0) return { removed: [], kept: new Set(), deleted: 0, checkpoints }
  // PostgreSQL: each table's rows by its index, never a scan of the whole table per batch (what
  // a planner whose statistics predate a bulk change picks: 100k due streams then took minutes).
  // SET LOCAL ends with this transaction (safe behind PgBouncer in transaction mode); with
  // current statistics it changes no plan, and a table without the index is still scanned.
  if (trx.dialect.name === 'postgres') await trx.rawQuery('set local enable_seqscan = off')
  const lock = trx
    .from(tables.streams)
    .select('run_id', 'status', 'ended_at')
    .whereIn('run_id', runIds)
  if (!trx.dialect.name.includes('sqlite')) lock.forUpdate()
  const rows: { run_id: string; status: string; ended_at: unknown }[] = await lock
  const ended = rows
    .filter((row) => ['ended', 'failed'].includes(row.status))
    .filter((row) => row.ended_at !== null && Number(row.ended_at) < endedBefore)
    .map((row) => row.run_id)
  const parked = new Set<string>()
  if (ended.length > 0) {
    const live: { stream_run_id: string }[] = await trx
      .from(tables.suspensions)
      .distinct('stream_run_id')
      .whereIn('stream_run_id', ended)
      .whereIn('status', LIVE_SUSPENSIONS)
    for (const row of live) parked.add(row.stream_run_id)
  }
  const due = ended.filter((runId) => !parked.has(runId))
  const dueSet = new Set(due)
  const kept = new Set(rows.map((row) => row.run_id).filter((runId) => !dueSet.has(runId)))
  const deleted =
    due.length === 0
      ? 0
      : affectedRows(await trx.from(tables.streams).whereIn('run_id', due).delete())
  // Gone now: removed here, or by another purge or a close meanwhile.
  const removed = runIds.filter((runId) => !kept.has(runId))
  if (due.length === 0) return { removed, kept, deleted, checkpoints }
  // Only the rows of the streams removed HERE: one gone before the lock was removed with its
  // rows by whoever removed it (a close's leftovers are orphans, `deleteOrphanRows`), and may
  // be open again by now, with rows of its own the lock's snapshot did not show (PostgreSQL).
  await trx.from(tables.frames).whereIn('run_id', due).delete()
  for (const table of streamOwnedTables(tables)) {
    await trx.from(table).whereIn('stream_run_id', due).delete()
  }
  const stored = checkpoints && (await deleteStreamCheckpoints(trx, tables, due))
  return { removed, kept, deleted, checkpoints: stored }
}

/**
 * Delete rows of the owned tables whose stream is gone and that were created before `before`:
 * what a purge of an earlier release left (it removed streams and frames only), or a close.
 * Up to `limit` streams per statement, table by table, until none is left. Returns the rows
 * deleted.
 */
export async function deleteOrphanRows(
  client: QueryClientContract,
  tables: TableNames,
  before: number,
  limit: number
): Promise<number> {
  let deleted = 0
  for (const table of streamOwnedTables(tables)) {
    while (true) {
      const rows: { stream_run_id: string }[] = await client
        .knexQuery()
        .distinct('o.stream_run_id')
        .from({ o: table })
        .where('o.created_at', '<', before)
        .whereNotExists(function (this: Knex.QueryBuilder) {
          this.select(1)
            .from({ s: tables.streams })
            .whereRaw('?? = ??', ['s.run_id', 'o.stream_run_id'])
        })
        .limit(limit)
      const orphans = rows.map((row) => row.stream_run_id)
      if (orphans.length > 0) {
        deleted += Number(
          await client
            .from(table)
            .whereIn('stream_run_id', orphans)
            .where('created_at', '<', before)
            .whereNotExists((q) =>
              q
                .from(tables.streams)
                .whereRaw('?? = ??', [`${tables.streams}.run_id`, `${table}.stream_run_id`])
            )
            .delete()
        )
      }
      if (orphans.length < limit) break
    }
  }
  return deleted
}

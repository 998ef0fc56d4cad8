import type { Knex } from 'knex'
import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { deleteStreamCheckpoints } from './checkpoint_rows.js'
import { affectedRows } from './sql.js'

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
 * Up to `limit` streams a purge may remove (see {@link duePurge}), oldest end first. Open
 * streams, and the ended stream of a parked run (it still waits for a person), are never listed.
 */
export async function purgeableStreams(
  client: QueryClientContract,
  tables: TableNames,
  endedBefore: number,
  limit: number
): Promise<string[]> {
  const query = client.knexQuery().from(tables.streams).select(`${tables.streams}.run_id`)
  const rows = await duePurge(query, tables, endedBefore)
    .orderBy(`${tables.streams}.ended_at`, 'asc')
    .limit(limit)
  return rows.map((row: { run_id: string }) => row.run_id)
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
 * Remove the streams among `runIds` that are still due (checked again in the delete: one
 * reopened meanwhile is kept) and everything they own, inside `trx`: a handful of statements
 * for the whole batch, whatever its size. No row of an owned table is written for a stream that
 * is not open (a park, a resume and a door run all need it open, or absent for a new run), and
 * the stream's row stays locked until the commit. `checkpoints: false` skips the checkpoints
 * table (a schema migrated before it).
 *
 * @returns the streams gone (removed here, or by a concurrent purge or close: their rows go
 *   too), how many of them THIS delete removed (what the purge counts, so two replicas purging
 *   at once never count a stream twice), and whether the checkpoints table exists
 */
export async function purgeStreams(
  trx: TransactionClientContract,
  tables: TableNames,
  runIds: string[],
  endedBefore: number,
  checkpoints: boolean
): Promise<{ removed: string[]; deleted: number; checkpoints: boolean }> {
  if (runIds.length === 0) return { removed: [], deleted: 0, checkpoints }
  const stream = trx.knexQuery().from(tables.streams).whereIn('run_id', runIds)
  const deleted = affectedRows(await duePurge(stream, tables, endedBefore).delete())
  const left: { run_id: string }[] = await trx
    .from(tables.streams)
    .select('run_id')
    .whereIn('run_id', runIds)
  const kept = new Set(left.map((row) => row.run_id))
  // Gone now: removed here, or by another purge or a close meanwhile (their rows go too).
  const removed = runIds.filter((runId) => !kept.has(runId))
  if (removed.length === 0) return { removed, deleted, checkpoints }
  await trx.from(tables.frames).whereIn('run_id', removed).delete()
  for (const table of streamOwnedTables(tables)) {
    await trx.from(table).whereIn('stream_run_id', removed).delete()
  }
  const stored = checkpoints && (await deleteStreamCheckpoints(trx, tables, removed))
  return { removed, deleted, checkpoints: stored }
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

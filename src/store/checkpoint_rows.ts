import type { Knex } from 'knex'
import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { nowMs as now } from './sql.js'

/** A stored translator checkpoint: the state (a door's JSON) after row `seq`, whose fingerprint is `row`. */
export interface CheckpointRow {
  seq: number
  row: string
  state: string
}

/**
 * The doors' stored translator checkpoints (the `checkpoints` table, `createCheckpointsTable`),
 * through Lucid. Every method throws what the query throws; {@link isMissingTable} tells a
 * schema migrated before the table from any other error.
 */
export class CheckpointRows {
  constructor(
    /** The Lucid client the tables live on (the sink's). */
    readonly client: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  /**
   * The stored checkpoint of `(runId, key)` with the greatest seq at or before `seq`, of the
   * stream's incarnation `incarnation` (its row's `created_at`), or `null`. One read, backwards
   * along the primary key.
   */
  async nearest(
    runId: string,
    key: string,
    incarnation: number,
    seq: number
  ): Promise<CheckpointRow | null> {
    const row = await this.client()
      .from(this.tables.checkpoints)
      .select('seq', 'row', 'state')
      .where('run_id', runId)
      .where('key', key)
      .where('seq', '<=', seq)
      .where('incarnation', incarnation)
      .orderBy('seq', 'desc')
      .first()
    return row ? { seq: Number(row.seq), row: row.row, state: row.state } : null
  }

  /**
   * Store checkpoints, in one statement; one already stored at the same `(runId, key, seq)` stays
   * as it is.
   */
  async save(runId: string, key: string, incarnation: number, checkpoints: CheckpointRow[]) {
    if (checkpoints.length === 0) return
    const at = now()
    await this.client()
      .knexQuery()
      .table(this.tables.checkpoints)
      .insert(
        checkpoints.map((checkpoint) => ({
          run_id: runId,
          key,
          seq: checkpoint.seq,
          incarnation,
          row: checkpoint.row,
          state: checkpoint.state,
          created_at: at,
        }))
      )
      .onConflict(['run_id', 'key', 'seq'])
      .ignore()
  }

  /** Whether `error` (of a method here) means the table does not exist ({@link isMissingTable}). */
  isMissingTable(error: unknown) {
    return isMissingTable(error)
  }

  /** Delete every stored checkpoint of `(runId, key)` (one of them did not match the stored rows). */
  async discard(runId: string, key: string) {
    await this.client()
      .from(this.tables.checkpoints)
      .where('run_id', runId)
      .where('key', key)
      .delete()
  }
}

/**
 * Delete the stored checkpoints of a stream (or of several) inside `trx` (their removal), in a savepoint: a
 * schema migrated before the table (see {@link isMissingTable}) must not abort the removal
 * (PostgreSQL aborts a transaction at its first failed statement). Returns `false` when the
 * table does not exist.
 *
 * @throws any other error of the delete
 */
export async function deleteStreamCheckpoints(
  trx: TransactionClientContract,
  tables: TableNames,
  runIds: string | string[]
): Promise<boolean> {
  try {
    await trx.transaction(async (savepoint) => {
      await savepoint
        .from(tables.checkpoints)
        .whereIn('run_id', typeof runIds === 'string' ? [runIds] : runIds)
        .delete()
    })
    return true
  } catch (error) {
    if (isMissingTable(error)) return false
    throw error
  }
}

/**
 * Whether a query failed because its table does not exist: PostgreSQL `42P01`, MySQL/MariaDB
 * `ER_NO_SUCH_TABLE` (1146), SQLite `no such table`.
 */
export function isMissingTable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false
  const { code, errno, message } = error as { code?: unknown; errno?: unknown; message?: unknown }
  if (code === '42P01' || code === 'ER_NO_SUCH_TABLE' || errno === 1146) return true
  return typeof message === 'string' && /no such table/i.test(message)
}

/**
 * Delete stored checkpoints whose stream is gone, or was purged and opened again since (no
 * stream row of their incarnation): what a checkpoint write racing a stream's removal left
 * behind. Never served (a read matches the incarnation), only taking room. Up to `limit`
 * (stream, incarnation) pairs at a time, until none is left. Returns how many rows went; 0 when
 * the table does not exist (see {@link isMissingTable}).
 *
 * @throws any other error of the queries
 */
export async function deleteOrphanCheckpoints(
  client: QueryClientContract,
  tables: TableNames,
  limit: number
): Promise<number> {
  let deleted = 0
  try {
    while (true) {
      const orphans: { run_id: string; incarnation: unknown }[] = await client
        .knexQuery()
        .select('c.run_id', 'c.incarnation')
        .from({ c: tables.checkpoints })
        .whereNotExists(function (this: Knex.QueryBuilder) {
          this.select(1)
            .from({ s: tables.streams })
            .whereRaw('?? = ??', ['s.run_id', 'c.run_id'])
            .whereRaw('?? = ??', ['s.created_at', 'c.incarnation'])
        })
        .groupBy('c.run_id', 'c.incarnation')
        .limit(limit)
      for (const orphan of orphans) {
        deleted += Number(
          await client
            .from(tables.checkpoints)
            .where('run_id', orphan.run_id)
            .where('incarnation', Number(orphan.incarnation))
            .delete()
        )
      }
      if (orphans.length < limit) return deleted
    }
  } catch (error) {
    if (isMissingTable(error)) return deleted
    throw error
  }
}

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

  /** Store a checkpoint; one already stored at the same `(runId, key, seq)` stays as it is. */
  async save(runId: string, key: string, incarnation: number, checkpoint: CheckpointRow) {
    await this.client()
      .knexQuery()
      .table(this.tables.checkpoints)
      .insert({
        run_id: runId,
        key,
        seq: checkpoint.seq,
        incarnation,
        row: checkpoint.row,
        state: checkpoint.state,
        created_at: now(),
      })
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
 * Delete a stream's stored checkpoints inside `trx` (a stream's removal), in a savepoint: a
 * schema migrated before the table (see {@link isMissingTable}) must not abort the removal
 * (PostgreSQL aborts a transaction at its first failed statement). Returns `false` when the
 * table does not exist.
 *
 * @throws any other error of the delete
 */
export async function deleteStreamCheckpoints(
  trx: TransactionClientContract,
  tables: TableNames,
  runId: string
): Promise<boolean> {
  try {
    await trx.transaction(async (savepoint) => {
      await savepoint.from(tables.checkpoints).where('run_id', runId).delete()
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

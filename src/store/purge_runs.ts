import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { isMissingTable } from './checkpoint_rows.js'
import { affectedRows } from './sql.js'

/**
 * Whose purges a row keeps: the background schedule's (config `purge`) or the purges run by
 * hand (`agent-stream:purge`, `agentStream.purge()`). One row each, the last run.
 */
export type PurgeRunKind = 'schedule' | 'manual'

/** The row's key of each kind (the schedule's predates manual purges being stored). */
const KEYS: Record<PurgeRunKind, string> = { schedule: 'purge', manual: 'manual' }

/** The longest failure kept (characters): a sentence, not a dump. */
const MAX_ERROR_CHARS = 1000

/** A purge's last run as stored (epoch ms of the database's clock). */
export interface StoredPurgeRun {
  startedAt: number
  /** `null` while it runs (or when the process running it died first). */
  endedAt: number | null
  /** Streams it removed; `null` while it runs, or when it failed. */
  purged: number | null
  /** Its failure (`code: message`); `null` when it succeeded, or while it runs. */
  error: string | null
}

/**
 * The last purge of a kind (the schedule's, or one run by hand) in the `purgeRuns` table
 * (`createPurgeRunsTable`), through Lucid: one row per kind, written when a run starts and when
 * it ends, read by any process. A schema
 * migrated before the table has none: writes do nothing and `last()` is `null` (the schedule
 * purges all the same). Every other error is thrown.
 */
export class PurgeRuns {
  constructor(
    /** The Lucid client the tables live on (the sink's). */
    readonly client: () => QueryClientContract,
    readonly tables: TableNames,
    readonly kind: PurgeRunKind = 'schedule'
  ) {}

  get #key() {
    return KEYS[this.kind]
  }

  /** A run started at `startedAt`: the row says so (not ended, nothing purged yet). */
  async started(startedAt: number) {
    await this.#quietly(() =>
      this.client()
        .knexQuery()
        .table(this.tables.purgeRuns)
        .insert({
          schedule: this.#key,
          ...this.#columns({ startedAt, endedAt: null, purged: null, error: null }),
        })
        .onConflict('schedule')
        .merge()
    )
  }

  /**
   * The run started at `run.startedAt` ended: its end, streams purged and error. A run that
   * started later (another replica's) is the last one: its row stays.
   */
  async ended(run: StoredPurgeRun) {
    await this.#quietly(async () => {
      const { started_at: startedAt, ...end } = this.#columns(run)
      const updated = await this.client()
        .from(this.tables.purgeRuns)
        .where('schedule', this.#key)
        .where('started_at', startedAt)
        .update(end)
      if (affectedRows(updated) > 0) return
      // No row of its start (written before the table existed, or its write failed): the end
      // is the row, unless another run's is there.
      await this.client()
        .knexQuery()
        .table(this.tables.purgeRuns)
        .insert({ schedule: this.#key, ...this.#columns(run) })
        .onConflict('schedule')
        .ignore()
    })
  }

  /** The last run any process stored; `null` before the first, or without the table. */
  async last(): Promise<StoredPurgeRun | null> {
    try {
      const row = await this.client()
        .from(this.tables.purgeRuns)
        .where('schedule', this.#key)
        .first()
      if (!row) return null
      return {
        startedAt: Number(row.started_at),
        endedAt: row.ended_at === null ? null : Number(row.ended_at),
        purged: row.purged === null ? null : Number(row.purged),
        error: row.error ?? null,
      }
    } catch (error) {
      if (isMissingTable(error)) return null
      throw error
    }
  }

  #columns(run: StoredPurgeRun) {
    return {
      started_at: run.startedAt,
      ended_at: run.endedAt,
      purged: run.purged,
      error: run.error === null ? null : run.error.slice(0, MAX_ERROR_CHARS),
    }
  }

  /** Run a write; a missing table (a schema migrated before it) is no error. */
  async #quietly(write: () => Promise<unknown>) {
    try {
      await write()
    } catch (error) {
      if (!isMissingTable(error)) throw error
    }
  }
}

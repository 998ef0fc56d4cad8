import type { Knex } from 'knex'
import { DEFAULT_TABLES, type TableNames } from './schema.js'

/**
 * Create the purge's record (a migration of its own:
 * `database/migrations/1700000000014_create_agent_purge_runs.ts`): ONE row per kind, the last
 * run of the background purge (config `purge`) that any replica started and the last purge run
 * by hand (`agent-stream:purge`), so every process sees them (`agent-stream:inspect --purge`
 * from a shell). `schedule` is its key (`purge`, `manual`); times are
 * epoch milliseconds of the database's clock in `bigint` columns, as every table of the
 * package; `ended_at` is null while the run goes on, `purged` the streams it removed, `error`
 * its failure (`code: message`), null when it succeeded.
 */
export function createPurgeRunsTable(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.createTable(tables.purgeRuns, (table) => {
    if (mysql) {
      table.charset('utf8mb4')
      table.collate('utf8mb4_bin')
    }
    table.string('schedule', 32).primary()
    table.bigInteger('started_at').notNullable()
    table.bigInteger('ended_at').nullable()
    table.integer('purged').nullable()
    table.text('error').nullable()
  })
}

/** Drop what {@link createPurgeRunsTable} created. */
export function dropPurgeRunsTable(
  schema: Knex.SchemaBuilder,
  tables: TableNames = DEFAULT_TABLES
) {
  return schema.dropTableIfExists(tables.purgeRuns)
}

import type { Knex } from 'knex'
import { DEFAULT_TABLES, type TableNames } from './schema.js'

/**
 * The table of Mastra's workflow snapshots (the `workflows` storage domain of Mastra, written by
 * `lucidMastraStore` of `adonis-agent-stream/mastra`): one row per Mastra run that is paused or
 * running, keyed by the workflow's name and the run id, its snapshot as JSON text. A Mastra agent
 * that waits for a tool call's approval is such a run; Mastra deletes the row when the run is
 * over. Added after the first release: a migration of its own
 * (`database/migrations/1700000000009_create_agent_stream_mastra_snapshots.ts`).
 */
export function createMastraSnapshotsTable(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.createTable(tables.mastraSnapshots, (table) => {
    if (mysql) {
      table.charset('utf8mb4')
      table.collate('utf8mb4_bin')
    }
    table.string('workflow_name', 191).notNullable()
    table.string('run_id', 191).notNullable()
    table.string('resource_id', 191).nullable()
    // A snapshot holds the run's messages and step results: it can be large.
    if (mysql) table.text('snapshot', 'longtext').notNullable()
    else table.text('snapshot').notNullable()
    /** Bumped by every write: a change is a compare-and-set on it (a resume is claimed once). */
    table.integer('version').notNullable().defaultTo(0)
    table.bigInteger('created_at').notNullable()
    table.bigInteger('updated_at').notNullable()
    table.primary(['workflow_name', 'run_id'])
    table.index(['run_id'])
    table.index(['created_at'])
  })
}

/** Drop what {@link createMastraSnapshotsTable} created. */
export function dropMastraSnapshotsTable(
  schema: Knex.SchemaBuilder,
  tables: TableNames = DEFAULT_TABLES
) {
  return schema.dropTableIfExists(tables.mastraSnapshots)
}

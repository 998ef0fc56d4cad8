import type { Knex } from 'knex'
import { DEFAULT_TABLES, type TableNames } from './schema.js'

/**
 * The columns a stop needs in the streams table (`docs/run-control.md`): what the stop asked
 * (`stop_mode`: `keep` or `rollback`, `null` while nobody stopped the run), when (database
 * time, epoch milliseconds) and by whom (the principal's id, `null` for nobody). Set once, by
 * the first stop; the writer's replica reads it to abort its agent, a rolled-back turn is left
 * out of the conversation and the chat's history. Added after the first release:
 * {@link addStopColumns}.
 */
function stopColumns(table: Knex.CreateTableBuilder | Knex.AlterTableBuilder) {
  table.string('stop_mode', 16).nullable()
  table.bigInteger('stop_requested_at').nullable()
  table.string('stop_by', 191).nullable()
}

/**
 * Add the stop columns to the streams table (a migration of its own:
 * `database/migrations/1700000000006_add_agent_stream_stop_columns.ts`).
 */
export function addStopColumns(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.alterTable(tables.streams, (table) => stopColumns(table))
}

/** Drop what {@link addStopColumns} added. */
export function dropStopColumns(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.alterTable(tables.streams, (table) => {
    table.dropColumn('stop_by')
    table.dropColumn('stop_requested_at')
    table.dropColumn('stop_mode')
  })
}

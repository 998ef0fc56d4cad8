import type { Knex } from 'knex'
import { DEFAULT_TABLES, type TableNames } from './schema.js'

/**
 * The column a run's trace needs in the streams table: `trace_context`, the W3C trace context
 * (`traceparent`, `tracestate`) of the run's root span as JSON text, or `null` when no tracer
 * was recording when the run started. Written once, with the stream's first open; read by the
 * replica that resumes or continues the run (and by a decision, for its park's span), so every
 * segment of the run is in one trace. Server-side only: never served, never in a frame.
 * Added after the first release: {@link addTraceColumns}.
 */
function traceColumns(table: Knex.CreateTableBuilder | Knex.AlterTableBuilder) {
  table.string('trace_context', 1024).nullable()
}

/**
 * Add the trace column to the streams table (a migration of its own:
 * `database/migrations/1700000000012_add_agent_stream_trace_column.ts`).
 */
export function addTraceColumns(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.alterTable(tables.streams, (table) => traceColumns(table))
}

/** Drop what {@link addTraceColumns} added. */
export function dropTraceColumns(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.alterTable(tables.streams, (table) => {
    table.dropColumn('trace_context')
  })
}

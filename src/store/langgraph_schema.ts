import type { Knex } from 'knex'

/**
 * The tables of the LangGraph checkpointer (`LucidSaver`, `adonis-agent-stream/langgraph`), named
 * like LangGraph's own savers' tables: a graph's checkpoints, the channel values they point at
 * (one row per channel version, shared by the checkpoints that did not change it) and the writes
 * of the tasks of a step (`putWrites`). Every one can be renamed (the saver's `tables` option).
 */
export interface LangGraphTableNames {
  /** One row per checkpoint of a thread and namespace: the checkpoint (without its values) and metadata. */
  checkpoints: string
  /** One row per channel version of a thread and namespace: the serialized value. */
  blobs: string
  /** One row per write of a task against a checkpoint (the writes pending for the next step). */
  writes: string
}

export const DEFAULT_LANGGRAPH_TABLES: LangGraphTableNames = {
  checkpoints: 'agent_langgraph_checkpoints',
  blobs: 'agent_langgraph_blobs',
  writes: 'agent_langgraph_writes',
}

/** Resolve partial LangGraph table names against the defaults. */
export function langGraphTableNames(
  overrides: Partial<LangGraphTableNames> = {}
): LangGraphTableNames {
  return { ...DEFAULT_LANGGRAPH_TABLES, ...overrides }
}

/**
 * Create the LangGraph checkpointer's tables (added after the first release: a migration of its
 * own, `database/migrations/1700000000008_create_agent_stream_langgraph_tables.ts`).
 *
 * Every serialized value is the saver's serde output kept byte for byte: its type (`json`,
 * `bytes`, ...) in a column of its own, its bytes in a binary column (PostgreSQL `bytea`, MySQL
 * `longblob`, SQLite `blob`). Ids compare byte for byte (MySQL `utf8mb4_bin`, PostgreSQL
 * `COLLATE "C"` on the checkpoint ids), so checkpoint ids (uuid6, time-ordered strings) sort the
 * way LangGraph sorts them: the newest is the greatest.
 *
 * @param schema a Knex schema builder (`this.schema` in a Lucid migration)
 * @param dialect Lucid's dialect name (`this.db.dialect.name`)
 */
export function createLangGraphTables(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: LangGraphTableNames = DEFAULT_LANGGRAPH_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  const pg = dialect === 'postgres' || dialect === 'pg'
  const bytes = (table: Knex.CreateTableBuilder, name: string) =>
    mysql ? table.specificType(name, 'longblob') : table.binary(name)
  /** A checkpoint id: ordered byte for byte on every dialect. */
  const checkpointId = (table: Knex.CreateTableBuilder, name: string) =>
    pg ? table.specificType(name, 'varchar(64) collate "C"') : table.string(name, 64)
  /** The columns that place a row: its thread and namespace (`''`: the root graph). */
  const place = (table: Knex.CreateTableBuilder) => {
    if (mysql) {
      table.charset('utf8mb4')
      table.collate('utf8mb4_bin')
    }
    table.string('thread_id', 191).notNullable()
    table.string('checkpoint_ns', 191).notNullable().defaultTo('')
  }
  return schema
    .createTable(tables.checkpoints, (table) => {
      place(table)
      checkpointId(table, 'checkpoint_id').notNullable()
      /** The checkpoint this one followed (`null`: the thread's first in its namespace). */
      checkpointId(table, 'parent_checkpoint_id').nullable()
      table.string('type', 32).notNullable()
      /** The checkpoint without its `channel_values` (they are in the blobs table). */
      bytes(table, 'checkpoint').notNullable()
      table.string('metadata_type', 32).notNullable()
      bytes(table, 'metadata').notNullable()
      table.bigInteger('created_at').notNullable()
      // The newest of a thread's namespace, and a page before a checkpoint: one index read.
      table.primary(['thread_id', 'checkpoint_ns', 'checkpoint_id'])
    })
    .createTable(tables.blobs, (table) => {
      place(table)
      table.string('channel', 191).notNullable()
      table.string('version', 64).notNullable()
      /** The serde's type, or `empty` for a channel emptied at this version (`blob` is `null`). */
      table.string('type', 32).notNullable()
      bytes(table, 'blob').nullable()
      table.primary(['thread_id', 'checkpoint_ns', 'channel', 'version'])
    })
    .createTable(tables.writes, (table) => {
      place(table)
      checkpointId(table, 'checkpoint_id').notNullable()
      table.string('task_id', 191).notNullable()
      /** The write's index in its task's writes; negative for the special channels (errors, interrupts). */
      table.integer('idx').notNullable()
      table.string('channel', 191).notNullable()
      /** The task's path (`''` when the caller gave none): pending writes replay in `(task_path, task_id, idx)` order. */
      table.text('task_path').notNullable()
      table.string('type', 32).notNullable()
      bytes(table, 'blob').notNullable()
      table.primary(['thread_id', 'checkpoint_ns', 'checkpoint_id', 'task_id', 'idx'])
    })
}

/** Drop what {@link createLangGraphTables} created. */
export function dropLangGraphTables(
  schema: Knex.SchemaBuilder,
  tables: LangGraphTableNames = DEFAULT_LANGGRAPH_TABLES
) {
  return schema
    .dropTableIfExists(tables.writes)
    .dropTableIfExists(tables.blobs)
    .dropTableIfExists(tables.checkpoints)
}

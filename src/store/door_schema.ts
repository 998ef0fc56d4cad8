import type { Knex } from 'knex'
import { binaryUtf8, DEFAULT_TABLES, type TableNames } from './schema.js'

/**
 * The doors' own tables (the AG-UI runs, the thread claims, the busy-thread queue) and the thread
 * list's index: each has a migration of its own but the AG-UI runs' (created with the streams).
 * Re-exported by `adonis-agent-stream/schema` as the rest of `schema.ts`.
 */

/**
 * The AG-UI door's table: one row per AG-UI run (a segment of a stream a client started, or
 * resumed with answers), so every replica can tell a thread's stream, re-attach a run by its id,
 * refuse a used run id and answer a repeated resume without running it twice.
 */
export function createDoorTables(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.createTable(tables.aguiRuns, (table) => {
    if (mysql) binaryUtf8(table)
    /** The client's `RunAgentInput.runId`. */
    table.string('run_id', 191).primary()
    table.string('thread_id', 191).notNullable()
    table.string('stream_run_id', 191).notNullable()
    /** The run reads the stream after this seq: 0 for a new run, the park's end for a resume. */
    table.integer('after_seq').notNullable()
    /** `start` or `resume`. */
    table.string('kind', 16).notNullable()
    /** SHA-256 of the resume (interrupt ids, statuses, payloads): a repeat replays, never reruns. */
    table.string('resume_hash', 64).nullable()
    /** Names of the tools the client offered (JSON), when frontend tools are on. */
    table.text('client_tools').nullable()
    /** The user message that started the run (JSON `{ id, content }`), for `MESSAGES_SNAPSHOT`. */
    table.text('input_message').nullable()
    /** The principal the run is for (others get 404), never served. */
    table.string('owner_id', 191).nullable()
    table.bigInteger('created_at').notNullable()
    table.index(['thread_id', 'created_at'])
    table.index(['stream_run_id'])
  })
}

/**
 * The index of a person's threads (added after the first release, so a schema created before it
 * gets it from a migration of its own): the doors' runs by owner, thread and start, so a
 * person's chat or thread list (`store/thread_list.ts`) reads only that person's rows, grouped
 * by thread in index order. Run it once, after {@link createDoorTables}.
 */
export function addThreadListIndex(
  schema: Knex.SchemaBuilder,
  tables: TableNames = DEFAULT_TABLES
) {
  return schema.alterTable(tables.aguiRuns, (builder) => {
    builder.index(['owner_id', 'thread_id', 'created_at'], `${tables.aguiRuns}_owner_index`)
  })
}

/** Drop what {@link addThreadListIndex} added. */
export function dropThreadListIndex(
  schema: Knex.SchemaBuilder,
  tables: TableNames = DEFAULT_TABLES
) {
  return schema.alterTable(tables.aguiRuns, (builder) => {
    builder.dropIndex(['owner_id', 'thread_id', 'created_at'], `${tables.aguiRuns}_owner_index`)
  })
}

/** Drop what {@link createDoorTables} created. */
export function dropDoorTables(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.dropTableIfExists(tables.aguiRuns)
}

/**
 * The doors' thread claims (added after the first release: a schema created before it gets it
 * from a migration of its own). One row per thread id a door started a run in: its owner, the
 * first principal whose claim landed. A claim is ONE statement (an insert that does nothing on
 * a conflict, `store/door_runs.ts`), so two people posting the first message of one chat id at
 * once never both get it: the second is refused, the first keeps it.
 */
export function createThreadsTable(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.createTable(tables.threads, (table) => {
    if (mysql) binaryUtf8(table)
    table.string('thread_id', 191).primary()
    /** The principal the thread is for (`null`: anonymous callers), never served. */
    table.string('owner_id', 191).nullable()
    table.bigInteger('created_at').notNullable()
  })
}

/** Drop what {@link createThreadsTable} created. */
export function dropThreadsTable(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.dropTableIfExists(tables.threads)
}

/**
 * The busy-thread queue (`multitaskStrategy: 'enqueue'`, added after the first release: a
 * migration of its own). One row per message waiting for its thread's current run to end: the
 * run it will start (its id, thread, owner, what it records), the runner's input and what the
 * person said (JSON, never served), its place in the thread's queue (`position`, taken under
 * the thread's row lock), and the replica starting it (`status` `queued` or `starting`, with a
 * claim that lapses: exactly one replica starts it). A row is deleted once its run started.
 */
export function createRunQueueTable(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.createTable(tables.runQueue, (table) => {
    if (mysql) binaryUtf8(table)
    /** The run the message starts (the client's `runId`, or one the door minted). */
    table.string('run_id', 191).primary()
    table.string('thread_id', 191).notNullable()
    /** Its place in the thread's queue: the lowest starts first. */
    table.integer('position').notNullable()
    /** The principal the run is for, never served. */
    table.string('owner_id', 191).nullable()
    /** What the run records, its runner's input, its principal and what the person said (JSON). */
    if (mysql) table.text('start', 'mediumtext').notNullable()
    else table.text('start').notNullable()
    /** queued | starting */
    table.string('status', 16).notNullable()
    table.string('claimed_by', 191).nullable()
    table.bigInteger('claim_expires_at').nullable()
    table.bigInteger('created_at').notNullable()
    table.index(['thread_id', 'position'])
  })
}

/** Drop what {@link createRunQueueTable} created. */
export function dropRunQueueTable(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.dropTableIfExists(tables.runQueue)
}

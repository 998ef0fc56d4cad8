import type { Knex } from 'knex'

/**
 * The table names the package uses. Every one can be renamed in config; the defaults are what
 * the published migration creates.
 */
export interface TableNames {
  /** One row per stream: its sequence counter, status and writer lease. */
  streams: string
  /** One row per stored frame (consecutive text coalesced into one row). */
  frames: string
  /** One row per park of a run: what its continuation needs (never served). */
  suspensions: string
  /** One row per tool call waiting for approve/reject, per park. */
  approvals: string
  /** One row per question set waiting for answers, per park. */
  elicitations: string
  /** One row per AG-UI run a client started or resumed: its thread, stream and start. */
  aguiRuns: string
  /** Translator states of the doors at points of a stream, so any replica re-attaches near. */
  checkpoints: string
  /** One row per thread a door started a run in: who owns it (the first to claim it). */
  threads: string
  /** One row per message waiting for its thread's current run to end (`multitaskStrategy: 'enqueue'`). */
  runQueue: string
  /** Mastra's workflow snapshots (a paused Mastra agent run), `lucidMastraStore` (`/mastra`). */
  mastraSnapshots: string
  /** One row per Durable Streams stream created through the write path: its path and rules. */
  durableStreams: string
  /** One row per idempotent producer of such a stream: its epoch and last seq. */
  durableProducers: string
  /** Durable Streams subscriptions: their configuration and wake state (PROTOCOL.md 6-7). */
  dsSubscriptions: string
  /** The streams each Durable Streams subscription follows, with the offset acked. */
  dsSubscriptionLinks: string
  /** The webhook outbox: one row per lifecycle event and endpoint, until delivered or dead. */
  webhookDeliveries: string
  /** The purge's last runs: the schedule's (config `purge`) and one run by hand, a row each. */
  purgeRuns: string
}

export const DEFAULT_TABLES: TableNames = {
  streams: 'agent_streams',
  frames: 'agent_stream_frames',
  suspensions: 'agent_suspensions',
  approvals: 'agent_approvals',
  elicitations: 'agent_elicitations',
  aguiRuns: 'agent_agui_runs',
  checkpoints: 'agent_stream_checkpoints',
  threads: 'agent_threads',
  runQueue: 'agent_run_queue',
  mastraSnapshots: 'agent_mastra_snapshots',
  durableStreams: 'agent_durable_streams',
  durableProducers: 'agent_durable_producers',
  dsSubscriptions: 'agent_ds_subscriptions',
  dsSubscriptionLinks: 'agent_ds_subscription_links',
  webhookDeliveries: 'agent_webhook_deliveries',
  purgeRuns: 'agent_purge_runs',
}

/** Resolve partial table names against the defaults. */
export function tableNames(overrides: Partial<TableNames> = {}): TableNames {
  return { ...DEFAULT_TABLES, ...overrides }
}

/**
 * THE table definitions: the package's tests, the migration stub users get
 * (`stubs/make/migration/agent_stream_tables.stub`) and the benchmark all create the tables
 * through this function, so there is one definition.
 *
 * Times are epoch milliseconds in `bigint` columns: identical on every dialect, compared in SQL
 * without time-zone or precision surprises (MySQL `timestamp` drops milliseconds by default).
 *
 * @param schema a Knex schema builder (`this.schema` in a Lucid migration)
 * @param dialect Lucid's dialect name (`this.db.dialect.name`): MySQL gets `utf8mb4_bin` so run
 *   ids compare case-sensitively and text keeps every character, and `mediumtext` bodies
 */
export function createStreamTables(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema
    .createTable(tables.streams, (table) => {
      if (mysql) binaryUtf8(table)
      table.string('run_id', 191).primary()
      /** The last allocated seq: 1, 2, 3 ... gap-free, bumped under this row's lock. */
      table.integer('last_seq').notNullable().defaultTo(0)
      /** Bumped by every write, appends included: the tail reader's cheap "anything new?". */
      table.bigInteger('rev').notNullable().defaultTo(0)
      /** open | ended | failed */
      table.string('status', 16).notNullable()
      table.bigInteger('lease_expires_at').nullable()
      table.bigInteger('created_at').notNullable()
      table.bigInteger('updated_at').notNullable()
      table.bigInteger('ended_at').nullable()
      table.index(['status', 'lease_expires_at'])
      table.index(['ended_at'])
      // The admin's runs list, newest first, a keyset page at a time (`store/run_list.ts`). A
      // schema created before it has no such index: the list still works, sorting instead.
      table.index(['created_at', 'run_id'])
    })
    .createTable(tables.frames, (table) => {
      if (mysql) binaryUtf8(table)
      table.string('run_id', 191).notNullable()
      table.integer('seq').notNullable()
      /** text | component | event | error | elicitation | approval | end */
      table.string('kind', 16).notNullable()
      /** Raw text for a text row (it grows while the message does); JSON for any other frame. */
      if (mysql) table.text('body', 'mediumtext').notNullable()
      else table.text('body').notNullable()
      /** A component's `id`: a later frame with the same id supersedes this one. */
      table.string('component_id', 191).nullable()
      table.boolean('superseded').notNullable().defaultTo(false)
      /**
       * The writer's token of the commit that last wrote this row (inserted it, or grew its text):
       * after a COMMIT whose outcome is unknown (the connection dropped), the retry finds out
       * whether it landed instead of writing it twice.
       */
      table.string('commit_token', 64).nullable()
      table.bigInteger('created_at').notNullable()
      table.primary(['run_id', 'seq'])
      table.index(['run_id', 'component_id'])
      // Where a segment ends (`segmentEnd`): found by the index, not by scanning the run's rows.
      table.index(['run_id', 'kind', 'seq'])
    })
}

/**
 * The columns a segment's continuation needs in the streams table (`continuation.md`): the
 * writer's epoch, bumped by a replica that takes a dead writer's segment over (every commit of
 * a writer checks it: the old writer finds its lease lost), and what the running segment is
 * (JSON: its run, thread, principal, input, and the parks it resumed), so another replica can
 * continue it. Never served. Added after the first release: {@link addWriterColumns}.
 */
function writerColumns(table: Knex.CreateTableBuilder | Knex.AlterTableBuilder, mysql: boolean) {
  table.integer('writer_epoch').notNullable().defaultTo(0)
  if (mysql) table.text('segment', 'mediumtext').nullable()
  else table.text('segment').nullable()
}

/**
 * Add {@link writerColumns} to a streams table created before them (a migration of its own:
 * `database/migrations/1700000000004_add_agent_stream_writer_columns.ts`).
 */
export function addWriterColumns(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.alterTable(tables.streams, (table) => writerColumns(table, mysql))
}

/** Drop what {@link addWriterColumns} added. */
export function dropWriterColumns(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.alterTable(tables.streams, (table) => {
    table.dropColumn('segment')
    table.dropColumn('writer_epoch')
  })
}

/**
 * The parking tables (suspensions, approvals, elicitations): the same one-place rule as
 * {@link createStreamTables}. Rows are keyed by the PARKED run's id (a sub-agent's own id when a
 * child asked), the park number and the item id, so a tool-call id reused across iterations
 * still gets a row per park.
 */
export function createParkingTables(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  const json = (table: Knex.CreateTableBuilder, name: string) =>
    mysql ? table.text(name, 'mediumtext').nullable() : table.text(name).nullable()
  /** Columns every parked item has. */
  const item = (table: Knex.CreateTableBuilder) => {
    if (mysql) binaryUtf8(table)
    table.string('run_id', 191).notNullable()
    table.integer('park').notNullable()
    table.string('item_id', 191).notNullable()
    table.string('stream_run_id', 191).notNullable()
    table.string('thread_id', 191).notNullable()
    table.integer('stream_seq').notNullable()
    /** Who may decide: `requester` or a role. */
    table.string('approver', 191).notNullable()
    /** Who the run is for (JSON `{ id, roles? }`): checked by the approver policy, never served. */
    json(table, 'principal')
    table.bigInteger('expires_at').nullable()
    /** pending | approved | rejected | answered | expired | cancelled */
    table.string('status', 16).notNullable()
    table.string('decided_by', 191).nullable()
    table.string('decided_via', 32).nullable()
    table.text('reason').nullable()
    table.bigInteger('decided_at').nullable()
    table.bigInteger('created_at').notNullable()
    table.primary(['run_id', 'park', 'item_id'])
    table.index(['status', 'expires_at'])
    table.index(['thread_id', 'status'])
    table.index(['stream_run_id', 'status'])
  }
  return schema
    .createTable(tables.suspensions, (table) => {
      if (mysql) binaryUtf8(table)
      table.string('run_id', 191).notNullable()
      table.integer('park').notNullable()
      table.string('stream_run_id', 191).notNullable()
      table.string('thread_id', 191).notNullable()
      table.string('parent_run_id', 191).nullable()
      /**
       * The run whose segment parked (its `start` or `resume` returned `parked`). Every run that
       * parked in one segment is resumed once, together: as that run when several parked.
       */
      table.string('segment_run_id', 191).nullable()
      json(table, 'principal')
      /** The host's opaque checkpoint (JSON): stored, never served. */
      json(table, 'checkpoint')
      /** The run's input (JSON), handed to `resume` again. */
      json(table, 'input')
      /** open (items being written) | parked | claimed | resumed | cancelled | abandoned */
      table.string('status', 16).notNullable()
      table.string('claimed_by', 191).nullable()
      table.bigInteger('claim_expires_at').nullable()
      table.integer('attempts').notNullable().defaultTo(0)
      table.bigInteger('created_at').notNullable()
      table.bigInteger('updated_at').notNullable()
      table.primary(['run_id', 'park'])
      table.index(['status', 'claim_expires_at'])
      table.index(['stream_run_id', 'status'])
    })
    .createTable(tables.approvals, (table) => {
      item(table)
      table.string('tool_name', 191).notNullable()
      json(table, 'input')
      /** Arguments a person edited: they replace `input` whole. */
      json(table, 'edited_input')
      json(table, 'confirmation')
      json(table, 'target')
    })
    .createTable(tables.elicitations, (table) => {
      item(table)
      json(table, 'request')
      /** `{ answers, skipped }` once answered. */
      json(table, 'reply')
    })
}

/** Drop what {@link createParkingTables} created. */
export function dropParkingTables(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema
    .dropTableIfExists(tables.elicitations)
    .dropTableIfExists(tables.approvals)
    .dropTableIfExists(tables.suspensions)
}

/**
 * The indexes of the admin console's queue and history (added after the first release, so a
 * schema created before them gets them from a migration of their own): pending items by when
 * they were asked, decided items by when they were decided. The queue's first page and its
 * live watermark are then index reads, whatever the tables hold. Run it once, after
 * {@link createParkingTables} (the package's second migration, or the stub's `up`).
 */
export function addQueueIndexes(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  for (const table of [tables.approvals, tables.elicitations]) {
    schema.alterTable(table, (builder) => {
      builder.index(['status', 'created_at'], `${table}_queue_index`)
      builder.index(['decided_at'], `${table}_decided_index`)
    })
  }
  return schema
}

/** Drop what {@link addQueueIndexes} added. */
export function dropQueueIndexes(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  for (const table of [tables.approvals, tables.elicitations]) {
    schema.alterTable(table, (builder) => {
      builder.dropIndex(['status', 'created_at'], `${table}_queue_index`)
      builder.dropIndex(['decided_at'], `${table}_decided_index`)
    })
  }
  return schema
}

/**
 * The doors' stored translator checkpoints (added after the first release: a schema created
 * before it gets it from a migration of its own, and serves from in-memory checkpoints until
 * then). One row per checkpoint: the state (the door's JSON) after row `seq` of a stream, whose
 * fingerprint is `row`; `key` is a SHA-256 hex of the door, its state format and the options
 * that shape the state (never the stream id); `incarnation` the stream row's `created_at` (a
 * stream purged and opened again under the same id is another stream).
 */
export function createCheckpointsTable(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.createTable(tables.checkpoints, (table) => {
    if (mysql) binaryUtf8(table)
    table.string('run_id', 191).notNullable()
    table.string('key', 64).notNullable()
    table.integer('seq').notNullable()
    table.bigInteger('incarnation').notNullable()
    table.string('row', 64).notNullable()
    if (mysql) table.text('state', 'mediumtext').notNullable()
    else table.text('state').notNullable()
    table.bigInteger('created_at').notNullable()
    // The nearest at or before a seq: one index read, backwards.
    table.primary(['run_id', 'key', 'seq'])
  })
}

/** Drop what {@link createCheckpointsTable} created. */
export function dropCheckpointsTable(
  schema: Knex.SchemaBuilder,
  tables: TableNames = DEFAULT_TABLES
) {
  return schema.dropTableIfExists(tables.checkpoints)
}

/** MySQL: every character kept (utf8mb4), ids compared byte for byte (`_bin`, case-sensitive). */
export function binaryUtf8(table: Knex.CreateTableBuilder) {
  table.charset('utf8mb4')
  table.collate('utf8mb4_bin')
}

/** Drop what {@link createStreamTables} created (the migration's `down`). */
export function dropStreamTables(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.dropTableIfExists(tables.frames).dropTableIfExists(tables.streams)
}

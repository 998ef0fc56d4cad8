import type { Knex } from 'knex'
import { DEFAULT_TABLES, type TableNames } from './schema.js'

/**
 * The tables of the Durable Streams write path (`src/durable_streams/write/`). A stream created
 * through it IS a stream of the package: a row of the streams table (its `run_id` is `ds:` and a
 * hash of its path) and one row of the frames table per append (kind `data`: the append's
 * messages as a JSON array in JSON mode, its bytes as base64 otherwise), so purge and
 * `agent-stream:inspect` see it. What the protocol adds lives here:
 *
 * - `durableStreams`: one row per stream: its path, content type, TTL or expiry, closure, the
 *   last `Stream-Seq`, the fork it was made from, its owner, and whether it is soft-deleted
 *   (deleted while forks read it);
 * - `durableProducers`: one row per idempotent producer of a stream: its epoch and last seq.
 *
 * Added after the first release: a migration of its own
 * (`database/migrations/1700000000010_create_agent_durable_streams.ts`).
 */
export function createDurableStreamTables(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  const utf8Bin = (table: Knex.CreateTableBuilder) => {
    if (!mysql) return
    table.charset('utf8mb4')
    table.collate('utf8mb4_bin')
  }
  return schema
    .createTable(tables.durableStreams, (table) => {
      utf8Bin(table)
      /** The streams table's row (`ds:<hash of the path>`). */
      table.string('run_id', 191).primary()
      /** The stream's path under the door (any length, `/` allowed). */
      table.text('path').notNullable()
      table.string('content_type', 255).notNullable()
      /** `Stream-TTL` in seconds (sliding: reads and writes renew it), or null. */
      table.integer('ttl_seconds').nullable()
      /** `Stream-Expires-At` as given, or null. */
      table.string('expires_at_text', 64).nullable()
      /** When the stream expires (epoch ms: the TTL's or the given time), or null for never. */
      table.bigInteger('expires_at').nullable()
      table.boolean('closed').notNullable().defaultTo(false)
      /** The producer that closed it (`id epoch seq`), for an idempotent retried close. */
      table.string('closed_by', 255).nullable()
      /** The last `Stream-Seq` an append carried (compared as text). */
      table.string('last_stream_seq', 255).nullable()
      table.string('fork_source', 191).nullable()
      /** The source's position the fork was made at (its seq), and the sub-offset into the next append. */
      table.integer('fork_seq').nullable()
      table.integer('fork_sub_offset').nullable()
      /** Deleted while forks of it remain: 410, its path not reusable until they go. */
      table.boolean('soft_deleted').notNullable().defaultTo(false)
      /** The creator's principal id (`null`: anonymous). */
      table.string('owner', 191).nullable()
      table.bigInteger('created_at').notNullable()
      table.index(['fork_source'])
      table.index(['expires_at'])
    })
    .createTable(tables.durableProducers, (table) => {
      utf8Bin(table)
      table.string('run_id', 191).notNullable()
      table.string('producer_id', 191).notNullable()
      table.bigInteger('epoch').notNullable()
      table.bigInteger('last_seq').notNullable()
      table.bigInteger('updated_at').notNullable()
      table.primary(['run_id', 'producer_id'])
    })
}

/** Drop what {@link createDurableStreamTables} created. */
export function dropDurableStreamTables(
  schema: Knex.SchemaBuilder,
  tables: TableNames = DEFAULT_TABLES
) {
  return schema.dropTableIfExists(tables.durableProducers).dropTableIfExists(tables.durableStreams)
}

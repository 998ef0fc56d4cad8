import type { Knex } from 'knex'
import { DEFAULT_TABLES, type TableNames } from './schema.js'

/**
 * Create the webhook outbox (a migration of its own:
 * `database/migrations/1700000000013_create_agent_webhook_deliveries.ts`): one row per lifecycle
 * event and endpoint, written in the transaction of the change it reports, claimed by one
 * replica at a time (`lease_holder`, `lease_expires_at`), until `delivered` or `dead`. Times are
 * epoch milliseconds in `bigint` columns, as every table of the package.
 */
export function createWebhookTables(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  return schema.createTable(tables.webhookDeliveries, (table) => {
    if (mysql) {
      table.charset('utf8mb4')
      table.collate('utf8mb4_bin')
    }
    /** The `webhook-id`: the idempotency key, the same on every attempt. */
    table.string('id', 64).primary()
    table.string('event_type', 32).notNullable()
    /** The endpoint's URL as configured. */
    table.text('endpoint').notNullable()
    table.string('stream_run_id', 191).notNullable()
    table.string('run_id', 191).notNullable()
    /**
     * The JSON body sent, byte for byte on every attempt. `mediumtext` on MySQL/MariaDB: a
     * `run.parked` of a few hundred items passes TEXT's 64 KB, and a refused insert would undo
     * the park it reports.
     */
    if (mysql) table.text('payload', 'mediumtext').notNullable()
    else table.text('payload').notNullable()
    /** `pending`, `delivered` or `dead`. */
    table.string('status', 16).notNullable()
    table.integer('attempts').notNullable().defaultTo(0)
    table.bigInteger('next_attempt_at').notNullable()
    table.string('lease_holder', 191).nullable()
    table.bigInteger('lease_expires_at').nullable()
    /** The last failure's stable code (`http_503`, `timeout`, ...): never the receiver's body. */
    table.string('last_error', 64).nullable()
    table.bigInteger('created_at').notNullable()
    table.bigInteger('updated_at').notNullable()
    table.bigInteger('delivered_at').nullable()
    table.index(['status', 'next_attempt_at'])
    table.index(['stream_run_id'])
    table.index(['delivered_at'])
  })
}

/** Drop what {@link createWebhookTables} created. */
export function dropWebhookTables(schema: Knex.SchemaBuilder, tables: TableNames = DEFAULT_TABLES) {
  return schema.dropTableIfExists(tables.webhookDeliveries)
}

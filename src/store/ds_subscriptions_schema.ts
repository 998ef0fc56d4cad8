import type { Knex } from 'knex'
import { DEFAULT_TABLES, type TableNames } from './schema.js'

/** The longest stream path a subscription links (its links table's `path` column). */
export const LINK_PATH_MAX = 512

/**
 * Create the subscription tables (a migration of their own:
 * `database/migrations/1700000000011_create_agent_ds_subscriptions.ts`). Times are epoch
 * milliseconds in `bigint` columns, as every table of the package.
 */
export function createDsSubscriptionTables(
  schema: Knex.SchemaBuilder,
  dialect: string,
  tables: TableNames = DEFAULT_TABLES
) {
  const mysql = dialect === 'mysql' || dialect === 'mysql2'
  const binary = (table: Knex.CreateTableBuilder) => {
    if (!mysql) return
    table.charset('utf8mb4')
    table.collate('utf8mb4_bin')
  }
  return schema
    .createTable(tables.dsSubscriptions, (table) => {
      binary(table)
      table.string('id', 191).primary()
      /** The normalized configuration (JSON) and its hash (an identical PUT re-confirms). */
      table.text('config').notNullable()
      table.string('config_hash', 64).notNullable()
      table.string('owner_id', 191).nullable()
      /** The fencing counter: bumped by every wake. */
      table.integer('generation').notNullable().defaultTo(0)
      /** The wake in flight, its snapshot of stream tails (JSON), who holds it, until when. */
      table.string('wake_id', 64).nullable()
      table.text('wake_streams').nullable()
      table.string('holder', 191).nullable()
      table.bigInteger('lease_expires_at').nullable()
      /** `active`, or `failed` while a webhook retry is scheduled. */
      table.string('status', 16).notNullable()
      table.integer('attempts').notNullable().defaultTo(0)
      table.bigInteger('next_attempt_at').nullable()
      table.bigInteger('created_at').notNullable()
      table.index(['lease_expires_at'])
      table.index(['next_attempt_at'])
    })
    .createTable(tables.dsSubscriptionLinks, (table) => {
      binary(table)
      table.string('subscription_id', 191).notNullable()
      table.string('path', LINK_PATH_MAX).notNullable()
      table.boolean('explicit').notNullable().defaultTo(false)
      table.boolean('glob').notNullable().defaultTo(false)
      /** The last offset processed, inclusive. */
      table.string('acked_offset', 64).notNullable()
      table.primary(['subscription_id', 'path'])
      table.index(['path'])
    })
}

/** Drop what {@link createDsSubscriptionTables} created. */
export function dropDsSubscriptionTables(
  schema: Knex.SchemaBuilder,
  tables: TableNames = DEFAULT_TABLES
) {
  return schema
    .dropTableIfExists(tables.dsSubscriptionLinks)
    .dropTableIfExists(tables.dsSubscriptions)
}

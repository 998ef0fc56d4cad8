import { BaseSchema } from '@adonisjs/lucid/schema'
import {
  createDurableStreamTables,
  dropDurableStreamTables,
} from '../../src/store/durable_schema.js'

/**
 * The Durable Streams write path's tables (its streams' paths and rules, their idempotent
 * producers), in a migration of their own so a database migrated before them gets them too
 * (`createDurableStreamTables`).
 */
export default class extends BaseSchema {
  async up() {
    createDurableStreamTables(this.schema, this.db.dialect.name)
  }

  async down() {
    dropDurableStreamTables(this.schema)
  }
}

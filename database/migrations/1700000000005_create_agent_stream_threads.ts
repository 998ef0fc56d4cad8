import { BaseSchema } from '@adonisjs/lucid/schema'
import { createThreadsTable, dropThreadsTable } from '../../src/store/door_schema.js'

/**
 * The doors' thread claims, in a migration of their own so a database migrated before them gets
 * the table too (`createThreadsTable`).
 */
export default class extends BaseSchema {
  async up() {
    createThreadsTable(this.schema, this.db.dialect.name)
  }

  async down() {
    dropThreadsTable(this.schema)
  }
}

import { BaseSchema } from '@adonisjs/lucid/schema'
import { createRunQueueTable, dropRunQueueTable } from '../../src/store/door_schema.js'

/**
 * The busy-thread queue (`multitaskStrategy: 'enqueue'`), in a migration of its own so a
 * database migrated before it gets the table too (`createRunQueueTable`).
 */
export default class extends BaseSchema {
  async up() {
    createRunQueueTable(this.schema, this.db.dialect.name)
  }

  async down() {
    dropRunQueueTable(this.schema)
  }
}

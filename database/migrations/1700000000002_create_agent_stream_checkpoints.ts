import { BaseSchema } from '@adonisjs/lucid/schema'
import { createCheckpointsTable, dropCheckpointsTable } from '../../src/store/schema.js'

/**
 * The doors' stored translator checkpoints, in a migration of their own so a database migrated
 * before them gets the table too (`createCheckpointsTable`).
 */
export default class extends BaseSchema {
  async up() {
    createCheckpointsTable(this.schema, this.db.dialect.name)
  }

  async down() {
    dropCheckpointsTable(this.schema)
  }
}

import { BaseSchema } from '@adonisjs/lucid/schema'
import { createPurgeRunsTable, dropPurgeRunsTable } from '../../src/store/purge_runs_schema.js'

/**
 * The purge's last runs (the schedule's, and one run by hand), in a migration of its own: every
 * process reads them.
 */
export default class extends BaseSchema {
  async up() {
    createPurgeRunsTable(this.schema, this.db.dialect.name)
  }

  async down() {
    dropPurgeRunsTable(this.schema)
  }
}

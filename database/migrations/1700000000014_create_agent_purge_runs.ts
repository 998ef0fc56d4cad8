import { BaseSchema } from '@adonisjs/lucid/schema'
import { createPurgeRunsTable, dropPurgeRunsTable } from '../../src/store/purge_runs_schema.js'

/** The background purge's last run, in a migration of its own: every process reads it. */
export default class extends BaseSchema {
  async up() {
    createPurgeRunsTable(this.schema, this.db.dialect.name)
  }

  async down() {
    dropPurgeRunsTable(this.schema)
  }
}

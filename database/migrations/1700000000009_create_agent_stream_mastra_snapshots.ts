import { BaseSchema } from '@adonisjs/lucid/schema'
import {
  createMastraSnapshotsTable,
  dropMastraSnapshotsTable,
} from '../../src/store/mastra_schema.js'

/**
 * Mastra's workflow snapshots (`lucidMastraStore`, `adonis-agent-stream/mastra`), in a migration
 * of its own so a database migrated before it gets the table too (`createMastraSnapshotsTable`).
 */
export default class extends BaseSchema {
  async up() {
    createMastraSnapshotsTable(this.schema, this.db.dialect.name)
  }

  async down() {
    dropMastraSnapshotsTable(this.schema)
  }
}

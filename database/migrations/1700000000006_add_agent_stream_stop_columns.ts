import { BaseSchema } from '@adonisjs/lucid/schema'
import { addStopColumns, dropStopColumns } from '../../src/store/stop_schema.js'

/**
 * What a stop asked of a run (`keep` or `rollback`), when and by whom, in a migration of its own
 * so a database migrated before run control gets the columns too (`addStopColumns`).
 */
export default class extends BaseSchema {
  async up() {
    addStopColumns(this.schema)
  }

  async down() {
    dropStopColumns(this.schema)
  }
}

import { BaseSchema } from '@adonisjs/lucid/schema'
import { addWriterColumns, dropWriterColumns } from '../../src/store/schema.js'

/**
 * The streams' writer epoch and running segment (a dead writer's segment continued by another
 * replica), in a migration of its own so a database migrated before them gets them too
 * (`addWriterColumns`).
 */
export default class extends BaseSchema {
  async up() {
    addWriterColumns(this.schema, this.db.dialect.name)
  }

  async down() {
    dropWriterColumns(this.schema)
  }
}

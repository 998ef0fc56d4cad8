import { BaseSchema } from '@adonisjs/lucid/schema'
import { addQueueIndexes, dropQueueIndexes } from '../../src/store/schema.js'

/**
 * The admin console's queue indexes, in a migration of their own so a database migrated before
 * them gets them too (`addQueueIndexes`).
 */
export default class extends BaseSchema {
  async up() {
    addQueueIndexes(this.schema)
  }

  async down() {
    dropQueueIndexes(this.schema)
  }
}

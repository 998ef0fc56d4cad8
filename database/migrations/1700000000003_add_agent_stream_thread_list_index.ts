import { BaseSchema } from '@adonisjs/lucid/schema'
import { addThreadListIndex, dropThreadListIndex } from '../../src/store/door_schema.js'

/**
 * The index of a person's chat and thread lists, in a migration of its own so a database migrated
 * before it gets it too (`addThreadListIndex`).
 */
export default class extends BaseSchema {
  async up() {
    addThreadListIndex(this.schema)
  }

  async down() {
    dropThreadListIndex(this.schema)
  }
}

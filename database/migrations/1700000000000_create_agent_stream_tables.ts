import { BaseSchema } from '@adonisjs/lucid/schema'
import {
  createParkingTables,
  createStreamTables,
  dropParkingTables,
  dropStreamTables,
} from '../../src/store/schema.js'
import { createDoorTables, dropDoorTables } from '../../src/store/door_schema.js'

/**
 * The package's own migration (its tests run it through Lucid's migrator). Users get the same
 * tables from `stubs/make/migration/agent_stream_tables.stub`: both call the one definition.
 */
export default class extends BaseSchema {
  async up() {
    createStreamTables(this.schema, this.db.dialect.name)
    createParkingTables(this.schema, this.db.dialect.name)
    createDoorTables(this.schema, this.db.dialect.name)
  }

  async down() {
    dropDoorTables(this.schema)
    dropParkingTables(this.schema)
    dropStreamTables(this.schema)
  }
}

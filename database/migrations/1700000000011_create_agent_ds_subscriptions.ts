import { BaseSchema } from '@adonisjs/lucid/schema'
import {
  createDsSubscriptionTables,
  dropDsSubscriptionTables,
} from '../../src/store/ds_subscriptions_schema.js'

/** Durable Streams subscriptions (PROTOCOL.md 6-7): their wake state and the streams they follow. */
export default class extends BaseSchema {
  async up() {
    createDsSubscriptionTables(this.schema, this.db.dialect.name)
  }

  async down() {
    dropDsSubscriptionTables(this.schema)
  }
}

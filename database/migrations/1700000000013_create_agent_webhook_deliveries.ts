import { BaseSchema } from '@adonisjs/lucid/schema'
import { createWebhookTables, dropWebhookTables } from '../../src/store/webhook_schema.js'

/** The webhook outbox: lifecycle events waiting for, or done with, their delivery. */
export default class extends BaseSchema {
  async up() {
    createWebhookTables(this.schema, this.db.dialect.name)
  }

  async down() {
    dropWebhookTables(this.schema)
  }
}

import { BaseSchema } from '@adonisjs/lucid/schema'
import { createLangGraphTables, dropLangGraphTables } from '../../src/store/langgraph_schema.js'

/**
 * The LangGraph checkpointer's tables (`LucidSaver`, `adonis-agent-stream/langgraph`), in a
 * migration of their own so a database migrated before them gets them too
 * (`createLangGraphTables`).
 */
export default class extends BaseSchema {
  async up() {
    createLangGraphTables(this.schema, this.db.dialect.name)
  }

  async down() {
    dropLangGraphTables(this.schema)
  }
}

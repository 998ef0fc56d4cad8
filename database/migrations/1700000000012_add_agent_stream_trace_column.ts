import { BaseSchema } from '@adonisjs/lucid/schema'
import { addTraceColumns, dropTraceColumns } from '../../src/store/trace_schema.js'

/**
 * The W3C trace context of a run's root span (`trace_context` on the streams table), so the
 * replica that resumes a run hours later continues its trace (docs/observability.md).
 */
export default class extends BaseSchema {
  async up() {
    addTraceColumns(this.schema)
  }

  async down() {
    dropTraceColumns(this.schema)
  }
}

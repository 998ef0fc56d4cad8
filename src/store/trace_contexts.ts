import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'

/**
 * A run's stored trace context (`trace_context` on its stream's row, `trace_schema.ts`): the
 * W3C carrier of its root span, written with the stream's first open, read by whichever replica
 * continues the run. Never served.
 */
export class TraceContexts {
  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  /** Store `carrier` (JSON text) on the stream's row, in the open's transaction. */
  async save(trx: TransactionClientContract, streamRunId: string, carrier: string) {
    await trx
      .from(this.tables.streams)
      .where('run_id', streamRunId)
      .update({ trace_context: carrier })
  }

  /** The stream's stored carrier (JSON text), or `null` (none stored, or no such stream). */
  async carrier(streamRunId: string): Promise<string | null> {
    const row = await this.connect()
      .from(this.tables.streams)
      .select('trace_context')
      .where('run_id', streamRunId)
      .first()
    return row?.trace_context ?? null
  }

  /**
   * The number of the segment the stream runs now: one more than the segment ends stored (each
   * park's end marker: `kind = 'end'` with an empty body). Read only for a span that records.
   */
  async segment(streamRunId: string): Promise<number> {
    const ends = await this.connect()
      .from(this.tables.frames)
      .where('run_id', streamRunId)
      .where('kind', 'end')
      .where('body', '')
      .count('* as n')
      .first()
    return Number(ends?.n ?? 0) + 1
  }
}

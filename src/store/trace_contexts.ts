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

  /**
   * The stream's carrier and the number of the segment it runs now: one more than the segment
   * ends stored (each park's end marker: `kind = 'end'` with an empty body), or `null`.
   */
  async read(streamRunId: string): Promise<{ carrier: string | null; segment: number } | null> {
    const client = this.connect()
    const row = await client
      .from(this.tables.streams)
      .select('trace_context')
      .where('run_id', streamRunId)
      .first()
    if (!row) return null
    const ends = await client
      .from(this.tables.frames)
      .where('run_id', streamRunId)
      .where('kind', 'end')
      .where('body', '')
      .count('* as n')
      .first()
    return { carrier: row.trace_context ?? null, segment: Number(ends?.n ?? 0) + 1 }
  }
}

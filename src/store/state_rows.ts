import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { eventFieldSql } from './frame_sql.js'
import { int } from './rows.js'

/**
 * A page of a stream's `state` event rows (the agent's state: snapshots and deltas), in seq
 * order: those after `afterSeq` up to `uptoSeq` (inclusive), at most `limit`. What a writer
 * that opens a stream with rows already in it rebuilds the agent's state from (a resume, a
 * takeover on another replica), a page at a time: its memory holds one page and the state.
 */
export async function stateRows(
  client: QueryClientContract,
  tables: TableNames,
  runId: string,
  afterSeq: number,
  uptoSeq: number,
  limit: number
): Promise<{ seq: number; body: string }[]> {
  const kind = eventFieldSql(client.dialect.name, 'f', 'kind')
  const rows = await client
    .from(`${tables.frames} as f`)
    .select('f.seq', 'f.body')
    .where('f.run_id', runId)
    .where('f.seq', '>', afterSeq)
    .where('f.seq', '<=', uptoSeq)
    .where('f.kind', 'event')
    .whereRaw(`${kind} = ?`, ['state'])
    .orderBy('f.seq', 'asc')
    .limit(limit)
  return rows.map((row: { seq: unknown; body: string }) => ({ seq: int(row.seq), body: row.body }))
}

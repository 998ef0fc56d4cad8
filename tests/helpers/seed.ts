import type { Database } from '@adonisjs/lucid/database'
import { frameRecord, type RowKind } from '../../src/store/rows.js'

/**
 * The stored frame at `seq` of a seeded agent turn: text every fifth row, a tool call
 * (`tool-input-available`) and its outputs between; as a frames row's `kind` and `body`.
 */
function turnRow(seq: number) {
  if (seq % 5 === 0) return { kind: 'text' as RowKind, body: `Some text of row ${seq}. `.repeat(4) }
  const event =
    seq % 5 === 1
      ? { kind: 'tool-input-available', id: `call_${seq}`, name: 'search', input: { q: seq } }
      : {
          kind: 'tool-output',
          id: `call_${seq - (seq % 5) + 1}`,
          output: { rows: [seq, seq + 1], ok: true },
        }
  return {
    kind: 'event' as RowKind,
    body: JSON.stringify({
      t: 'event',
      event: seq % 5 === 1 ? { ...event, toolKind: 'read' } : event,
    }),
  }
}

/**
 * Store a stream of `frames` frames directly (rows inserted 500 at a time: quick on every
 * database, for benchmarks and long-stream tests): an agent turn (see `turnRow`). `ended`: an end
 * marker follows and the stream is ended; otherwise it stays open, its writer's lease held for an
 * hour.
 */
export async function seedStream(db: Database, id: string, frames: number, ended: boolean) {
  const at = Date.now()
  const last = ended ? frames + 1 : frames
  await db
    .connection()
    .table('agent_streams')
    .insert({
      run_id: id,
      last_seq: last,
      rev: 1,
      status: ended ? 'ended' : 'open',
      lease_expires_at: ended ? null : at + 3_600_000,
      created_at: at,
      updated_at: at,
      ended_at: ended ? at : null,
    })
  const batch: object[] = []
  for (let seq = 1; seq <= last; seq++) {
    const row = seq > frames ? { kind: 'end' as RowKind, body: '' } : turnRow(seq)
    batch.push(frameRecord(id, { seq, ...row }, null, at))
    if (batch.length === 500 || seq === last) {
      await db.connection().insertQuery().table('agent_stream_frames').multiInsert(batch.splice(0))
    }
  }
}

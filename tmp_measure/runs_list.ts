// Throwaway measurement (not committed): the runs list's page time over 10,000 streams.
import { createDatabase, resetTables } from '../tests/helpers/db.js'
import { RunList } from '../src/store/run_list.js'
import { tableNames } from '../src/store/schema.js'

const db = createDatabase()
if (!process.env.KEEP) await resetTables(db)
const client = db.connection()
const tables = tableNames()
const N = 10_000
const t0 = Date.now() - N * 1000
for (let i = 0; i < (process.env.KEEP ? 0 : N); i += 150) {
  const streams = []
  const frames = []
  for (let j = i; j < Math.min(N, i + 150); j++) {
    const id = `run-${String(j).padStart(5, '0')}`
    const failed = j % 7 === 0
    streams.push({ run_id: id, last_seq: 3, rev: 3, status: 'ended', created_at: t0 + j * 1000, updated_at: t0 + j * 1000, ended_at: t0 + j * 1000 })
    frames.push({ run_id: id, seq: 1, kind: 'event', body: JSON.stringify({ t: 'event', event: { kind: 'tool-input-available', id: 'c', name: j % 10 === 0 ? 'deploy' : 'search', input: {}, toolKind: 'read' } }), superseded: false, created_at: t0 })
    frames.push({ run_id: id, seq: 2, kind: failed ? 'error' : 'text', body: failed ? '{"t":"error","code":"run_failed","message":"x"}' : 'hello', superseded: false, created_at: t0 })
    frames.push({ run_id: id, seq: 3, kind: 'end', body: '', superseded: false, created_at: t0 })
  }
  await client.table(tables.streams).multiInsert(streams)
  await client.table(tables.frames).multiInsert(frames)
}
const list = new RunList(() => client, tables)
const time = async (label: string, f: any) => {
  const runs = await list.list(f) // warm
  const times: number[] = []
  for (let k = 0; k < 5; k++) {
    const s = performance.now()
    await list.list(f)
    times.push(performance.now() - s)
  }
  times.sort((a, b) => a - b)
  console.log(`${process.env.DB} ${label}: ${runs.length} runs, median ${times[2].toFixed(1)} ms`)
}
await time('first page (51)', { limit: 51 })
await time('deep keyset page', { limit: 51, before: { createdAt: t0 + 2000 * 1000, runId: 'run-02000' } })
await time('status=failed', { limit: 51, status: 'failed' })
await time('tool=deploy', { limit: 51, tool: 'deploy' })
await db.manager.closeAll()

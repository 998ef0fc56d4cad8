/**
 * Purge at scale: N due streams (ended two days ago), each with a few frames, a stored translator
 * checkpoint, a door run row and a webhook delivery, seeded with bulk inserts; then ONE purge
 * (`sink.purge({ olderThanMs: 0 })`, the path `agent-stream:purge` and the schedule take) timed.
 * Prints streams/s per database and size (one JSON line each). A handful of streams NOT due
 * (open) are seeded too and checked to survive, and every due row is checked gone: a purge that
 * skips work fails the bench instead of scoring.
 *
 *   BENCH_DBS=sqlite,pg,mysql node --expose-gc --import=@poppinss/ts-exec bench/scale/purge.ts
 *   BENCH_QUICK=1: 1k and 10k streams; else 1k, 10k and 100k.
 */
import { loadavg } from 'node:os'
import type { Database } from '@adonisjs/lucid/database'
import { createRuntime } from '../../src/runtime.js'
import { tableNames } from '../../src/store/schema.js'
import { connectionConfig, createDatabase, resetTables } from '../../tests/helpers/db.js'
import { DBS as SCALE_DBS, QUICK } from './common.js'

const TABLES = tableNames()
const SIZES = process.env.BENCH_SIZES
  ? process.env.BENCH_SIZES.split(',').map(Number)
  : QUICK
    ? [1_000, 10_000]
    : [1_000, 10_000, 100_000]
const DBS = SCALE_DBS as ('sqlite' | 'pg' | 'mysql')[]
const FRAMES = 3
const KEPT = 10

const log = (...args: unknown[]) => console.error(...args)

/** Insert `rows` into `table`, a chunk at a time (bound-parameter limits of each dialect). */
async function bulk(db: Database, table: string, rows: Record<string, unknown>[]) {
  const columns = rows.length > 0 ? Object.keys(rows[0]).length : 1
  // SQLite's compound SELECT takes 500 rows at most; the others, bound parameters below 65k.
  const sqlite = db.connection().dialect.name.includes('sqlite')
  const chunk = Math.max(1, Math.min(sqlite ? 500 : 5_000, Math.floor(30_000 / columns)))
  for (let i = 0; i < rows.length; i += chunk) {
    await db
      .connection()
      .knexQuery()
      .table(table)
      .insert(rows.slice(i, i + chunk))
  }
}

async function seed(db: Database, n: number) {
  const ended = Date.now() - 2 * 86_400_000
  for (let from = 0; from < n + KEPT; from += 10_000) {
    const streams = []
    const frames = []
    const checkpoints = []
    const runs = []
    const deliveries = []
    for (let i = from; i < Math.min(n + KEPT, from + 10_000); i++) {
      const open = i >= n
      const runId = `${open ? 'keep' : 'due'}-${i}`
      streams.push({
        run_id: runId,
        last_seq: FRAMES,
        rev: FRAMES,
        status: open ? 'open' : 'ended',
        lease_expires_at: null,
        created_at: ended - 1000,
        updated_at: ended,
        // A day's runs end over the day: one a millisecond here, oldest first.
        ended_at: open ? null : ended - n + i,
      })
      for (let seq = 1; seq <= FRAMES; seq++) {
        frames.push({
          run_id: runId,
          seq,
          kind: seq === FRAMES ? 'end' : 'text',
          body: seq === FRAMES ? '' : 'Hello from the bench. ',
          created_at: ended,
        })
      }
      checkpoints.push({
        run_id: runId,
        key: 'agui',
        seq: 1,
        incarnation: ended - 1000,
        row: 'r',
        state: '{}',
        created_at: ended,
      })
      runs.push({
        run_id: `agui-${runId}`,
        thread_id: `t-${i}`,
        stream_run_id: runId,
        after_seq: 0,
        kind: 'start',
        created_at: ended,
      })
      deliveries.push({
        id: `d-${runId}`,
        event_type: 'run.finished',
        stream_run_id: runId,
        run_id: runId,
        endpoint: 'e',
        payload: '{}',
        status: 'delivered',
        attempts: 1,
        next_attempt_at: ended,
        created_at: ended,
        updated_at: ended,
      })
    }
    await bulk(db, TABLES.streams, streams)
    await bulk(db, TABLES.frames, frames)
    await bulk(db, TABLES.checkpoints, checkpoints)
    await bulk(db, TABLES.aguiRuns, runs)
    await bulk(db, TABLES.webhookDeliveries, deliveries).catch((error) => {
      if (from === 0) log('webhook deliveries not seeded:', (error as Error).message)
    })
  }
}

async function count(db: Database, table: string) {
  const row = await db.connection().from(table).count('* as n').first()
  return Number(row?.n ?? 0)
}

for (const dialect of DBS) {
  process.env.DB = dialect
  const db = createDatabase(connectionConfig(dialect))
  for (const n of SIZES) {
    await resetTables(db)
    const seeding = performance.now()
    await seed(db, n)
    // What autovacuum (PostgreSQL) or InnoDB's persistent statistics do after such a change on
    // their own; SQLite has none unless asked. BENCH_NO_ANALYZE=1: the purge right after the bulk
    // insert, on statistics that know nothing of it.
    if (process.env.BENCH_NO_ANALYZE !== '1') {
      for (const table of Object.values(TABLES)) {
        await db
          .connection()
          .rawQuery(dialect === 'mysql' ? `analyze table ${table}` : `analyze ${table}`)
      }
    }
    log(`${dialect} ${n}: seeded in ${Math.round(performance.now() - seeding)} ms`)
    const runtime = createRuntime(db, {
      runner: {
        start: async () => ({ status: 'finished' }),
        resume: async () => ({ status: 'finished' }),
      },
    })
    // BENCH_TRACE=1: time spent per statement kind, on stderr (where a purge's time goes).
    const spent = new Map<string, number>()
    const begun = new Map<string, number>()
    if (process.env.BENCH_TRACE === '1') {
      const client = db.connection().getWriteClient()
      client.on('query', (query: { __knexQueryUid: string }) =>
        begun.set(query.__knexQueryUid, performance.now())
      )
      client.on('query-response', (_: unknown, query: { __knexQueryUid: string; sql: string }) => {
        const at = begun.get(query.__knexQueryUid)
        const kind = query.sql.replace(/\s+/g, ' ').slice(0, 50)
        if (at !== undefined) spent.set(kind, (spent.get(kind) ?? 0) + performance.now() - at)
      })
    }
    const load = loadavg()[0]
    const started = performance.now()
    const removed = await runtime.sink.purge({ olderThanMs: 86_400_000 })
    const ms = performance.now() - started
    const left = await count(db, TABLES.streams)
    const frames = await count(db, TABLES.frames)
    if (removed !== n || left !== KEPT || frames !== KEPT * FRAMES) {
      throw new Error(
        `${dialect} ${n}: removed ${removed}, ${left} streams and ${frames} frames left`
      )
    }
    log(`${dialect} ${n}: purged in ${Math.round(ms)} ms`)
    for (const [kind, total] of spent) log(`  ${Math.round(total)} ms  ${kind}`)
    const line = { db: dialect, x: n, xLabel: 'due streams', load }
    console.log(
      JSON.stringify({
        metric: 'purge streams/s',
        ...line,
        value: Math.round((n / ms) * 1000),
        unit: 'streams/s',
      })
    )
    console.log(
      JSON.stringify({ metric: 'purge time', ...line, value: Math.round(ms), unit: 'ms' })
    )
    await runtime.close()
  }
  await db.manager.closeAll()
}

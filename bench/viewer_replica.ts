/**
 * One replica of the viewers benchmark (bench/viewers.ts), in its own process: it writes its
 * share of the talking runs (tokens at a fixed rate, each write time recorded) and serves every
 * run's AG-UI re-attach route over HTTP to whichever viewers connect to it. It counts its own
 * database transactions and reads, CPU and memory between `measure` commands.
 */
import { createRuntime } from '../src/runtime.js'
import { serveReattach } from './serve_reattach.js'
import { createDatabase } from '../tests/helpers/db.js'

const at = () => performance.timeOrigin + performance.now()
const db = createDatabase()
const runtime = createRuntime(db, {
  runner: {
    start: async () => ({ status: 'finished' }),
    resume: async () => ({ status: 'finished' }),
  },
  ...JSON.parse(process.env.SINK_OPTIONS ?? '{}'),
})
const { sink, door } = runtime

// Count what this replica asks of the database, as the driver sees it: a transaction is a
// BEGIN (a group commit carrying many streams is one), plus a lease renewal (one statement in
// autocommit); a read is a SELECT, not counting `select pg_notify(...)` (a write's wake-up).
let transactions = 0
let reads = 0
for (const client of new Set([db.connection().getReadClient(), db.connection().getWriteClient()])) {
  client.on('query', (q: { sql: string }) => {
    if (/^\s*(begin|start transaction)/i.test(q.sql)) transactions++
    else if (/^\s*update\b.*\blease_expires_at\b/i.test(q.sql) && !q.sql.includes('last_seq')) {
      if (!(q as { __knexTxId?: string }).__knexTxId) transactions++
    } else if (/^\s*select/i.test(q.sql) && !/^\s*select pg_notify/i.test(q.sql)) reads++
  })
}

const { server, port } = await serveReattach(door)

/** Write `tokens` tokens into each run at `intervalMs`, runs spread over one interval. */
async function write(runIds: string[], tokens: number, intervalMs: number) {
  const written: [string, number, number][] = []
  const writers = await Promise.all(runIds.map((id) => sink.open(id)))
  await Promise.all(
    writers.map(async (writer, r) => {
      const started = performance.now() + (r / runIds.length) * intervalMs
      for (let i = 0; i < tokens; i++) {
        const wait = started + i * intervalMs - performance.now()
        if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
        written.push([runIds[r], i, at()])
        await writer.write({ t: 'text', v: `${i.toString(36)}.` })
      }
      await writer.end()
    })
  )
  return written
}

let measuring = { cpu: process.cpuUsage(), wall: at(), transactions: 0, reads: 0 }
process.on('message', async (command: any) => {
  try {
    if (command.op === 'open') {
      for (const id of command.runIds) await sink.open(id)
      return process.send!({ ok: true })
    }
    if (command.op === 'write') {
      const written = await write(command.runIds, command.tokens, command.intervalMs)
      return process.send!({ ok: true, written })
    }
    if (command.op === 'measure') {
      if (command.start) {
        measuring = { cpu: process.cpuUsage(), wall: at(), transactions, reads }
        return process.send!({ ok: true })
      }
      const seconds = (at() - measuring.wall) / 1000
      const cpu = process.cpuUsage(measuring.cpu)
      return process.send!({
        ok: true,
        cpuPercent: ((cpu.user + cpu.system) / 1000 / (seconds * 1000)) * 100,
        rssMiB: process.memoryUsage().rss / 2 ** 20,
        heapMiB: process.memoryUsage().heapUsed / 2 ** 20,
        transactionsPerSecond: (transactions - measuring.transactions) / seconds,
        readsPerSecond: (reads - measuring.reads) / seconds,
      })
    }
    if (command.op === 'exit') {
      server.closeAllConnections()
      server.close()
      await sink.shutdown()
      await db.manager.closeAll()
      process.exit(0)
    }
  } catch (error) {
    process.send!({ ok: false, error: (error as Error).message })
  }
})
process.send!({ ready: true, port })

import { test } from '@japa/runner'
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { createDatabase, DIALECT, resetTables } from './helpers/db.js'
import { canStartPrivateServer, privateServerFor, type PrivateServer } from './helpers/db_server.js'
import { Replica } from './helpers/replica.js'
import { collect, runId, sleep, textOf } from './helpers/sink.js'

/**
 * Issue 21 item 10: a stalled database (every server process SIGSTOPped: no query fails, every
 * one waits) says nothing of a writer's lease. A replica whose reads stalled acts on no lease
 * until its reads have been healthy for a lease length: a writer that could not renew meanwhile
 * (here its process was frozen with the database, and thaws a moment after it) keeps its run,
 * and its readers get every frame. A private server (tests/helpers/db_server.ts).
 */
const SKIP = DIALECT === 'sqlite' || !canStartPrivateServer(DIALECT)
const LEASE_MS = 1000
const WORDS = Array.from({ length: 10 }, (_, i) => `w${i} `)

function replicaEnv(server: PrivateServer): Record<string, string> {
  return server.dialect === 'pg'
    ? { PG_PORT: String(server.port), PG_DATABASE: 'postgres' }
    : { MYSQL_PORT: String(server.port), MYSQL_DATABASE: 'agent_stream_outage' }
}

test.group('Database stall | leases', (group) => {
  const server = privateServerFor(group, DIALECT as 'pg' | 'mysql', SKIP)

  test('a stall longer than the lease fails no healthy run; readers get every frame', async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase(server().connection)
    await resetTables(db)
    const sink = new LucidTokenStreamSink(db, {
      leaseMs: LEASE_MS,
      notifier: 'poll',
      pollIntervalMs: 50,
    })
    cleanup(async () => {
      server().resume()
      await sink.shutdown()
      await db.manager.closeAll()
    })
    const writer = await Replica.start({ leaseMs: LEASE_MS }, { env: replicaEnv(server()) })
    const id = runId()
    await writer.call({ op: 'open', runId: id })
    await writer.call({ op: 'write', runId: id, frames: [{ t: 'text', v: 'before ' }] })
    const reading = collect(sink.subscribe(id), { timeoutMs: 30_000 })
    await sleep(300)
    // The database freezes, and with it the writer's host; the database thaws first.
    server().pause()
    writer.child.kill('SIGSTOP')
    await sleep(2.5 * LEASE_MS)
    server().resume()
    await sleep(0.4 * LEASE_MS)
    writer.child.kill('SIGCONT')
    await writer.call({
      op: 'write',
      runId: id,
      frames: WORDS.map((v) => ({ t: 'text', v })),
      delayMs: 50,
    })
    await writer.call({ op: 'end', runId: id })
    const frames = await reading
    assert.deepEqual(
      frames.map((frame) => frame.t),
      frames.map(() => 'text')
    )
    assert.equal(textOf(frames), `before ${WORDS.join('')}`)
    assert.equal((await sink.head(id))!.status, 'ended')
  })
    .skip(SKIP, 'needs a private PostgreSQL or MariaDB server')
    .timeout(60_000)
})

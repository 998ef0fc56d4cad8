import { test } from '@japa/runner'
import { notifiers } from '../src/follow/notifiers/index.js'
import { createDatabase, DIALECT } from './helpers/db.js'
import { pgbouncerBin, startPgBouncer } from './helpers/pgbouncer.js'
import { until } from './helpers/redis.js'
import { Replica } from './helpers/replica.js'
import { runId, setupSink, sleep } from './helpers/sink.js'
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'

/**
 * PgBouncer in transaction mode lets LISTEN through and then hands its server connection to
 * other clients: nothing is heard, readers here catch up only at the poll. The notifier finds
 * out with a NOTIFY of its own and warns once, with the fix; in session mode it never warns.
 */
const PROBE = { timeoutMs: 1000, everyMs: 1500 }

/** A sink whose Lucid connection (and so its LISTEN connection) goes through PgBouncer. */
async function sinkBehind(mode: 'transaction' | 'session', warnings: string[]) {
  const bouncer = await startPgBouncer(mode)
  const db = createDatabase(bouncer.connection)
  const sink = new LucidTokenStreamSink(db, {
    pollIntervalMs: 60_000,
    onError: (error) => warnings.push((error as Error).message),
    notifier: notifiers.pg({ pollIntervalMs: 60_000, probe: PROBE }),
  })
  return {
    sink,
    close: async () => {
      await sink.shutdown()
      await db.manager.closeAll()
    },
  }
}

test.group('LISTEN behind PgBouncer', (group) => {
  group.each.skip(DIALECT !== 'pg' || !pgbouncerBin(), 'PostgreSQL only, with pgbouncer installed')

  test('transaction mode: LISTEN hears nothing, and that is warned about once, with the fix', async ({
    assert,
  }) => {
    // The tables, on the database directly.
    await setupSink()
    const warnings: string[] = []
    const { sink, close } = await sinkBehind('transaction', warnings)
    try {
      const id = runId()
      const writer = await sink.open(id)
      const reading = sink.subscribe(id)[Symbol.asyncIterator]()
      const first = reading.next()
      await writer.write({ t: 'text', v: 'x' })
      await first
      // Several probes fail (one at once, then every 1.5 s): one warning.
      await until(() => warnings.length > 0, 10_000, 'the warning')
      await sleep(5 * PROBE.everyMs)
      const deaf = warnings.filter((message) => message.includes('hears no NOTIFY'))
      assert.lengthOf(deaf, 1, warnings.join('\n'))
      assert.include(deaf[0], 'transaction')
      assert.include(deaf[0], 'notifiers.pg({ connection })')
      assert.include(deaf[0], 'notifiers.redis()')
      // No address or driver text in it.
      assert.notMatch(deaf[0], /127\.0\.0\.1|\d{4,5}/)
      await writer.end()
      await reading.return?.()
    } finally {
      await close()
    }
  }).timeout(60_000)

  test('session mode: LISTEN works, a write elsewhere arrives at once, no warning', async ({
    assert,
  }) => {
    await setupSink()
    const warnings: string[] = []
    const { sink, close } = await sinkBehind('session', warnings)
    try {
      // The writer: another process on the database directly.
      const replica = await Replica.start({ pollIntervalMs: 60_000 })
      const id = runId()
      await replica.call({ op: 'open', runId: id })
      const frames: any[] = []
      const reading = (async () => {
        for await (const frame of sink.subscribe(id)) frames.push(frame)
      })()
      await sleep(500) // the LISTEN connection comes up with the first reader
      for (let i = 0; i < 3; i++) {
        await replica.call({ op: 'write', runId: id, frames: [{ t: 'text', v: `${i}` }] })
        // Through NOTIFY: the poll is a minute.
        await until(() => frames.length === i + 1, 10_000, `frame ${i}`)
      }
      // Past several probes: all came back.
      await sleep(5 * PROBE.everyMs)
      assert.deepEqual(warnings, [])
      await replica.call({ op: 'end', runId: id })
      await reading
    } finally {
      await close()
    }
  }).timeout(60_000)
})

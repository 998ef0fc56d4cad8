import { test } from '@japa/runner'
import { DIALECT } from './helpers/db.js'
import { Replica } from './helpers/replica.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'

test.group('PostgreSQL LISTEN/NOTIFY', () => {
  test('wakes a reader on another replica without polling, and reconnects after a drop', async ({
    assert,
  }) => {
    // Polling every minute: only NOTIFY can deliver within the test's bounds.
    const { sink, db } = await setupSink({ pollIntervalMs: 60_000 })
    const replica = await Replica.start({ pollIntervalMs: 60_000 })
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    const reader = sink.subscribe(id)[Symbol.asyncIterator]()
    const first = reader.next()
    await sleep(300) // the LISTEN connection comes up with the first reader
    await replica.call({ op: 'write', runId: id, frames: [{ t: 'text', v: 'before ' }] })
    assert.equal(((await first).value as any).v, 'before ')

    // Cut this process's listener connection from the server side, as a failover would.
    const killed = await db
      .connection()
      .rawQuery(
        `select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = ?`,
        [`agent-stream-listen-${process.pid}`]
      )
    assert.isAbove(killed.rows.length, 0)
    await sleep(1500) // backoff starts at 100 ms

    const rest = collect({ [Symbol.asyncIterator]: () => reader })
    const sentAt = Date.now()
    await replica.call({ op: 'write', runId: id, frames: [{ t: 'text', v: 'after' }] })
    await replica.call({ op: 'end', runId: id })
    const frames = await rest
    assert.equal(textOf(frames), 'after')
    assert.isBelow(Date.now() - sentAt, 5000)
  })
    .skip(DIALECT !== 'pg', 'PostgreSQL only')
    .timeout(30_000)
})

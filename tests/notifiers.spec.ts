import { test } from '@japa/runner'
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { notifiers } from '../src/follow/notifiers/index.js'
import { DIALECT } from './helpers/db.js'
import { collect, runId, setupSink, textOf } from './helpers/sink.js'

test.group('Notifier chosen in config', () => {
  test('notifiers.poll() as the sink option: readers still follow', async ({ assert }) => {
    const { sink } = await setupSink({ notifier: notifiers.poll({ pollIntervalMs: 50 }) })
    assert.equal(sink.options.pollIntervalMs, 50)
    const id = runId()
    const writer = await sink.open(id)
    const reading = collect(sink.subscribe(id))
    await writer.write({ t: 'text', v: 'polled' })
    await writer.end()
    assert.equal(textOf(await reading), 'polled')
  })

  test('notifiers.pg() needs PostgreSQL; beside NOTIFY the poll is the 1 s safety net', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink()
    if (DIALECT === 'pg') {
      assert.equal(sink.options.pollIntervalMs, 1000)
      const other = new LucidTokenStreamSink(db, { notifier: notifiers.pg() })
      assert.equal(other.options.pollIntervalMs, 1000)
      await other.shutdown()
    } else {
      assert.equal(sink.options.pollIntervalMs, 100)
      assert.throws(
        () => new LucidTokenStreamSink(db, { notifier: notifiers.pg() }),
        /needs a PostgreSQL connection/
      )
    }
  })
})

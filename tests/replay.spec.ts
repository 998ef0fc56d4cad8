import { test } from '@japa/runner'
import { collect, runId, setupSink } from './helpers/sink.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { seedStream } from './helpers/seed.js'

test.group('sink.replay', () => {
  test('yields what segments() yields for stored rows, from after up to until', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'hello world' })
    await writer.write({ t: 'component', name: 'card', id: 'c', data: { v: 1 } })
    await writer.write({ t: 'component', name: 'card', id: 'c', data: { v: 2 } })
    await writer.end()
    const all = await collect(sink.replay(id) as any)
    const live = await collect(sink.segments(id) as any, { limit: all.length })
    assert.deepEqual(all, live)
    assert.deepEqual(
      all.map((item: any) => item.cursor),
      ['1.11', '3', '4']
    )
    assert.equal((all.at(-1) as any).t, 'end')
    // From a cursor inside the text row, up to a cursor inside it.
    const cut = await collect(
      sink.replay(id, { after: '1.2', until: { seq: 1, offset: 5 } }) as any
    )
    assert.deepEqual(cut, [{ t: 'text', v: 'llo', cursor: '1.5' }] as any)
    // Up to a whole row, exclusive start.
    const middle = await collect(sink.replay(id, { after: { seq: 1 }, until: { seq: 3 } }) as any)
    assert.deepEqual(
      middle.map((item: any) => item.cursor),
      ['3']
    )
  })
})

test.group('Long reads let the event loop turn', () => {
  test('a reader far behind reads page after page, and the process turns between pages (subscribe, segments, replay)', async ({
    assert,
  }) => {
    // With a synchronous driver (better-sqlite3) a read resolves without waiting for I/O: a
    // reader going page after page would hold the process (other requests, its own corked
    // writes, a client that left) until it caught up.
    const { sink, db } = await setupSink()
    const id = runId('long')
    const rows = 3000
    await seedStream(db, id, rows, false)
    const reads = {
      subscribe: () => sink.subscribe(id),
      segments: () => sink.segments(id),
      replay: () => sink.replay(id),
    }
    for (const [name, read] of Object.entries(reads)) {
      let taken = 0
      let atTurn = -1
      setImmediate(() => (atTurn = taken))
      const iterator = (read() as AsyncIterable<unknown>)[Symbol.asyncIterator]()
      while (taken < rows && !(await iterator.next()).done) taken++
      await iterator.return?.()
      assert.equal(taken, rows, name)
      assert.isAtLeast(atTurn, 0, name)
      assert.isBelow(atTurn, rows / 2, `${name}: the process turned after ${atTurn} of ${rows}`)
    }
    // The raw rows, a page at a time (inspect, the admin run page).
    let taken = 0
    let atTurn = -1
    setImmediate(() => (atTurn = taken))
    for await (const page of sink.storedRows(id)) taken += page.length
    assert.equal(taken, rows)
    assert.isAtLeast(atTurn, 0, 'storedRows: the process never turned')
    assert.isBelow(atTurn, rows / 2, `storedRows: the process turned after ${atTurn} of ${rows}`)
    await db.from('agent_streams').where('run_id', id).update({ status: 'ended' })
  })

  test('a reader far behind reads pages growing from a small first one (16, 32, ... up to pageSize)', async ({
    assert,
  }) => {
    // Its first frame comes fast, and one whose client leaves early leaves little read for nothing.
    const { sink, db } = await setupSink()
    const id = runId('growing')
    await seedStream(db, id, 2000, false)
    const limits: number[] = []
    const page = sinkInternals(sink).reads.page.bind(sinkInternals(sink).reads)
    sinkInternals(sink).reads.page = (run, fromSeq, limit, maxBytes, options) => {
      limits.push(limit)
      return page(run, fromSeq, limit, maxBytes, options)
    }
    for (const read of [() => sink.subscribe(id), () => sink.replay(id, { growing: true })]) {
      limits.length = 0
      const iterator = (read() as AsyncIterable<unknown>)[Symbol.asyncIterator]()
      for (let taken = 0; taken < 2000; taken++) await iterator.next()
      await iterator.return?.()
      assert.deepEqual(limits.slice(0, 6), [16, 32, 64, 128, 256, 500])
    }
    await db.from('agent_streams').where('run_id', id).update({ status: 'ended' })
  })
})

import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import { collect, runId, setupSink } from './helpers/sink.js'

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
  /** An open stream of `rows` stored event rows (inserted directly: quick on every database). */
  async function seedOpenStream(db: Database, id: string, rows: number) {
    const at = Date.now()
    await db
      .connection()
      .table('agent_streams')
      .insert({
        run_id: id,
        last_seq: rows,
        rev: 1,
        status: 'open',
        lease_expires_at: at + 3_600_000,
        created_at: at,
        updated_at: at,
        ended_at: null,
      })
    const batch: object[] = []
    for (let seq = 1; seq <= rows; seq++) {
      batch.push({
        run_id: id,
        seq,
        kind: 'event',
        body: JSON.stringify({ t: 'event', event: { kind: 'title', title: `${seq}` } }),
        component_id: null,
        superseded: false,
        created_at: at,
      })
      if (batch.length === 500 || seq === rows) {
        await db
          .connection()
          .insertQuery()
          .table('agent_stream_frames')
          .multiInsert(batch.splice(0))
      }
    }
  }

  test('a reader far behind reads page after page, and the process turns between pages (subscribe, segments, replay)', async ({
    assert,
  }) => {
    // With a synchronous driver (better-sqlite3) a read resolves without waiting for I/O: a
    // reader going page after page would hold the process (other requests, its own corked
    // writes, a client that left) until it caught up.
    const { sink, db } = await setupSink()
    const id = runId('long')
    const rows = 3000
    await seedOpenStream(db, id, rows)
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
    assert.isBelow(atTurn, rows / 2, `storedRows: the process turned after ${atTurn} of ${rows}`)
    await db.from('agent_streams').where('run_id', id).update({ status: 'ended' })
  })
})

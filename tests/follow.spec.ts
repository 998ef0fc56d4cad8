import { test } from '@japa/runner'
import { LucidTokenStreamSink, sinkInternals } from '../src/sink/lucid_sink.js'
import { childSinkWriter } from '../src/sink/spi.js'
import type { DeliveredFrame } from '../src/core/frames.js'
import { createDatabase } from './helpers/db.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'

const strip = ({ cursor: _, ...frame }: any) => frame

test.group('Live follow', () => {
  test('many readers of one stream all get every frame, live', async ({ assert }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    const readers = Array.from({ length: 20 }, () => collect(sink.subscribe(id)))
    await sleep(50)
    for (let i = 0; i < 30; i++) {
      await writer.write({ t: 'text', v: `${i},` })
      if (i % 10 === 9) await writer.write({ t: 'event', event: { kind: 'step-finish' } })
    }
    await writer.end()
    const expected = Array.from({ length: 30 }, (_, i) => `${i},`).join('')
    for (const frames of await Promise.all(readers)) {
      assert.equal(textOf(frames), expected)
      assert.equal(frames.filter((f) => f.t === 'event').length, 3)
    }
  })

  test('database reads do not grow with the number of readers on a replica', async ({ assert }) => {
    const { sink, db } = await setupSink({ pollIntervalMs: 60_000 })
    const reads = { count: 0 }
    db.connection()
      .getReadClient()
      .on('query', (query: { sql: string }) => {
        if (/select/i.test(query.sql) && query.sql.includes('agent_stream_frames')) reads.count++
      })
    const readsFor = async (viewers: number) => {
      const id = runId()
      const writer = await sink.open(id)
      const readers = Array.from({ length: viewers }, () => collect(sink.subscribe(id)))
      await sleep(100)
      reads.count = 0
      for (let i = 0; i < 50; i++)
        await writer.write({ t: 'event', event: { kind: 'title', title: `${i}` } })
      await writer.end()
      await Promise.all(readers)
      return reads.count
    }
    const one = await readsFor(1)
    const many = await readsFor(50)
    // Same-replica commits reach the feed without any read at all.
    assert.equal(one, 0)
    assert.equal(many, 0)
    // The counter does count: a replay reads the store.
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'stored' })
    await writer.end()
    await collect(sink.subscribe(id))
    assert.isAbove(reads.count, 0)
  })

  test('a component with the same id replaces the earlier one on replay; live readers get both', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    const live = collect(sink.subscribe(id))
    await sleep(30)
    await writer.write({ t: 'component', name: 'chart', id: 'c1:ui:0', data: { v: 1 } })
    await writer.write({ t: 'text', v: 'between' })
    await writer.write({ t: 'component', name: 'chart', id: 'c1:ui:0', data: { v: 2 } })
    await writer.write({ t: 'component', name: 'table', id: 'c1:ui:1', data: { v: 9 } })
    await writer.end()
    const liveFrames = (await live).filter((f) => f.t === 'component').map((f: any) => f.data.v)
    assert.deepEqual(liveFrames, [1, 2, 9])
    const replay = (await collect(sink.subscribe(id))).map(strip)
    assert.deepEqual(replay, [
      { t: 'text', v: 'between' },
      { t: 'component', name: 'chart', id: 'c1:ui:0', data: { v: 2 } },
      { t: 'component', name: 'table', id: 'c1:ui:1', data: { v: 9 } },
    ])
  })

  test('partial components reach live readers and are never stored', async ({ assert }) => {
    const { sink, db } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    const reader = sink.subscribe(id)[Symbol.asyncIterator]()
    await writer.write({ t: 'text', v: 'look: ' })
    assert.equal(((await reader.next()).value as any).v, 'look: ')
    await writer.write({ t: 'component', name: 'form', data: { a: 1 }, partial: true })
    const partial = (await reader.next()).value as DeliveredFrame
    assert.deepEqual(strip(partial), {
      t: 'component',
      name: 'form',
      data: { a: 1 },
      partial: true,
    })
    // Its cursor is where it was published: resuming from it loses nothing stored.
    assert.equal(partial.cursor, '1.6')
    await writer.write({ t: 'component', name: 'form', data: { a: 1, b: 2 } })
    assert.deepEqual(strip((await reader.next()).value), {
      t: 'component',
      name: 'form',
      data: { a: 1, b: 2 },
    })
    await writer.end()
    assert.isTrue((await reader.next()).done)
    const stored = await db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .where('kind', 'component')
    assert.lengthOf(stored, 1)
    assert.notProperty(JSON.parse(stored[0].body), 'partial')
  })

  test('a writer that stops renewing its lease fails its stream for its readers', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ leaseMs: 300, pollIntervalMs: 50 })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'abandoned' })
    const reading = collect(sink.subscribe(id))
    writer.release() // as a dead process would: no end(), no more renewals
    const frames = await reading
    assert.deepInclude(frames.at(-1) as any, { t: 'error', code: 'run_failed' })
    assert.equal(
      (await db.connection().from('agent_streams').where('run_id', id).first()).status,
      'failed'
    )
  })

  test('a live writer keeps its stream open past the lease by renewing it', async ({ assert }) => {
    const { sink } = await setupSink({ leaseMs: 300, pollIntervalMs: 50 })
    const id = runId()
    const writer = await sink.open(id)
    const reading = collect(sink.subscribe(id))
    await writer.write({ t: 'text', v: 'slow ' })
    await sleep(900)
    await writer.write({ t: 'text', v: 'thinker' })
    await writer.end()
    const frames = await reading
    assert.equal(textOf(frames), 'slow thinker')
    assert.notInclude(
      frames.map((f) => f.t),
      'error'
    )
  })

  test('close() ends readers of an open stream and has() turns false', async ({ assert }) => {
    const { sink } = await setupSink({ pollIntervalMs: 50 })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'x' })
    const reading = collect(sink.subscribe(id))
    await sleep(50)
    await sink.close(id)
    const frames = await reading
    assert.deepInclude(frames.at(-1) as any, { t: 'error', code: 'run_failed' })
    assert.isFalse(await sink.has(id))
  })

  test('purge removes streams ended longer ago than the TTL, and ends their readers', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ ttlMs: 60_000, pollIntervalMs: 50 })
    const old = runId('old')
    const fresh = runId('fresh')
    const open = runId('open')
    for (const id of [old, fresh]) {
      const writer = await sink.open(id)
      await writer.write({ t: 'text', v: id })
      await writer.end()
    }
    await sink.open(open)
    await db
      .connection()
      .from('agent_streams')
      .where('run_id', old)
      .update({ ended_at: Date.now() - 120_000 })
    assert.equal(await sink.purge({ dryRun: true }), 1)
    assert.isTrue(await sink.has(old))
    assert.equal(await sink.purge(), 1)
    assert.isFalse(await sink.has(old))
    assert.isTrue(await sink.has(fresh))
    assert.isTrue(await sink.has(open))
    assert.deepEqual(await collect(sink.subscribe(old)), [])
    const rows = await db.connection().from('agent_stream_frames').where('run_id', old)
    assert.lengthOf(rows, 0)
    // olderThanMs overrides the TTL; open streams are never purged.
    assert.equal(await sink.purge({ olderThanMs: 0 }), 1)
    assert.isTrue(await sink.has(open))
  })

  test('a slow reader slows only itself and holds a bounded window', async ({ assert }) => {
    const { sink } = await setupSink({ windowSize: 64, pageSize: 50 })
    const id = runId()
    const writer = await sink.open(id)
    const fast = collect(sink.subscribe(id))
    const slow = sink.subscribe(id)[Symbol.asyncIterator]()
    const first = slow.next() // asks for one frame, then is left unread
    const total = 600
    for (let i = 0; i < total; i++)
      await writer.write({ t: 'event', event: { kind: 'title', title: `${i}` } })
    await writer.end()
    // The fast reader was not held back by the slow one.
    const fastFrames = await fast
    assert.lengthOf(fastFrames, total)
    assert.equal(((await first).value as any).event.title, '0')
    // One shared feed for both readers, whatever the lag.
    assert.equal(sinkInternals(sink).tail.followed, 1)
    // The slow reader still gets everything after its first frame, in order, from the store.
    const rest: any[] = []
    while (true) {
      const next = await slow.next()
      if (next.done) break
      rest.push(next.value)
    }
    assert.lengthOf(rest, total - 1)
    assert.deepEqual(
      rest.map((f) => f.event.title),
      Array.from({ length: total - 1 }, (_, i) => `${i + 1}`)
    )
  }).timeout(60_000)

  test('shutdown() ends readers quietly and leaves no timer or connection behind', async ({
    assert,
  }) => {
    const db = createDatabase()
    const sink = new LucidTokenStreamSink(db, { pollIntervalMs: 20 })
    const id = runId()
    const writer = await sink.open(id)
    const reader = sink.subscribe(id)[Symbol.asyncIterator]()
    const first = reader.next()
    await writer.write({ t: 'text', v: 'bye' })
    assert.equal(((await first).value as any).v, 'bye')
    assert.isTrue(sinkInternals(sink).tail.running) // the poll timer
    assert.isTrue(writer.leasing) // the lease renewal timer
    await sink.shutdown()
    // The run may go on elsewhere: no error frame, the reader just ends (and can resume).
    assert.isTrue((await reader.next()).done)
    assert.equal(sinkInternals(sink).tail.followed, 0)
    assert.isFalse(sinkInternals(sink).tail.running)
    assert.isFalse(writer.leasing)
    await db.manager.closeAll()
  })

  test('shutdown() first reads what was committed elsewhere: a reader here gets it, then ends', async ({
    assert,
  }) => {
    // Polls a minute apart and no LISTEN: only the shutdown's own last read can bring the frame.
    const { sink, db } = await setupSink({ pollIntervalMs: 60_000, notifier: 'poll' })
    const other = new LucidTokenStreamSink(db, { pollIntervalMs: 60_000 })
    const id = runId()
    const writer = await other.open(id)
    await writer.write({ t: 'text', v: 'before' })
    await writer.flush()
    const reading = collect(sink.subscribe(id))
    await sleep(50)
    await writer.write({ t: 'error', code: 'replica_shutdown', message: 'bye' })
    await writer.flush()
    await sink.shutdown()
    assert.deepEqual((await reading).map(strip), [
      { t: 'text', v: 'before' },
      { t: 'error', code: 'replica_shutdown', message: 'bye' },
    ])
    await other.shutdown()
  })

  test('re-attaching after a reopen waits for the new segment instead of ending', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId()
    let writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'first segment' })
    await writer.end()
    const [first] = await collect(sink.subscribe(id))
    writer = await sink.open(id)
    // From the end of the first segment: nothing new yet, and the stream is open again.
    const reading = collect(sink.subscribe(id, { after: '2' }))
    await sleep(100)
    await writer.write({ t: 'text', v: 'second' })
    await writer.end()
    assert.equal(first.cursor, '1.13')
    assert.equal(textOf(await reading), 'second')
  })

  test('a failed read is retried: the reader still gets the end', async ({ assert }) => {
    const { sink, db } = await setupSink({ pollIntervalMs: 30 })
    const other = new LucidTokenStreamSink(db, { pollIntervalMs: 30 })
    const id = runId()
    const writer = await other.open(id)
    const reading = collect(sink.subscribe(id))
    await sleep(50)
    const page = sinkInternals(sink).reads.page.bind(sinkInternals(sink).reads)
    let failures = 1
    sinkInternals(sink).reads.page = async (...args) => {
      if (failures-- > 0) throw new Error('connection reset')
      return page(...args)
    }
    await writer.write({ t: 'text', v: 'still arrives' })
    await writer.end()
    assert.equal(textOf(await reading), 'still arrives')
    assert.isBelow(failures, 0)
    await other.shutdown()
  })

  test('end() can be retried after a failed commit', async ({ assert }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'done' })
    const commit = sinkInternals(sink).store.commit.bind(sinkInternals(sink).store)
    let failures = 1
    sinkInternals(sink).store.commit = async (...args) => {
      if (failures-- > 0) throw new Error('deadlock')
      return commit(...args)
    }
    await assert.rejects(() => writer.end(), 'deadlock')
    await writer.end()
    const frames = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'done')
    assert.notInclude(
      frames.map((f) => f.t),
      'error'
    )
  })

  test("a finished child does not keep a dead parent's stream alive", async ({ assert }) => {
    const { sink } = await setupSink({ leaseMs: 300, pollIntervalMs: 50 })
    const id = runId()
    const parent = await sink.open(id)
    const child = childSinkWriter(await sink.open(id))
    await child.write({ t: 'text', v: 'child work' })
    await child.end()
    const reading = collect(sink.subscribe(id))
    parent.release() // the parent's process died: no end(), no renewals
    const frames = await reading
    assert.deepInclude(frames.at(-1) as any, { t: 'error', code: 'run_failed' })
  })
})

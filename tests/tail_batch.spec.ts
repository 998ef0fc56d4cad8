import { test } from '@japa/runner'
import { LucidTokenStreamSink, sinkInternals } from '../src/sink/lucid_sink.js'
import { DEFAULTS } from '../src/defaults.js'
import type { StreamFrame } from '../src/core/frames.js'
import { collect, runId, setupSink, sleep } from './helpers/sink.js'

const strip = ({ cursor: _, ...frame }: any) => frame

/**
 * Two sinks on one database, neither woken by the other but by an explicit poll: what one
 * writes reaches the other's readers only through its tail's reads, which are counted.
 */
async function twoReplicas(options: { windowBytes?: number } = {}) {
  const { sink, db } = await setupSink({ notifier: 'poll', pollIntervalMs: 60_000, ...options })
  const other = new LucidTokenStreamSink(db, { notifier: 'poll', pollIntervalMs: 60_000 })
  const calls = { page: 0, pages: [] as number[] }
  const page = sinkInternals(sink).reads.page.bind(sinkInternals(sink).reads)
  const pages = sinkInternals(sink).reads.pages.bind(sinkInternals(sink).reads)
  sinkInternals(sink).reads.page = (...args) => {
    calls.page++
    return page(...args)
  }
  sinkInternals(sink).reads.pages = (requests, ...rest) => {
    calls.pages.push(requests.length)
    return pages(requests, ...rest)
  }
  return { sink, other, calls, db }
}

/**
 * Until every stream's feed on `sink` is ready and its reader waits on it (caught up: it reads
 * nothing more from the store by itself).
 */
async function ready(sink: LucidTokenStreamSink, ids: string[]) {
  await Promise.all(ids.map((id) => sinkInternals(sink).tail.follow(id)))
  for (const id of ids) sinkInternals(sink).tail.unfollow(id)
  await sleep(20)
}

test.group('Tail: streams woken together share a read', () => {
  test('twenty streams changed on another replica are read in one store read', async ({
    assert,
  }) => {
    const { sink, other, calls } = await twoReplicas()
    const ids = Array.from({ length: 20 }, () => runId('batch'))
    const writers = await Promise.all(ids.map((id) => other.open(id)))
    const readers = ids.map((id) => collect(sink.subscribe(id)))
    await ready(sink, ids)
    calls.page = 0
    calls.pages = []
    await Promise.all(
      writers.map(async (writer, i) => {
        await writer.write({ t: 'event', event: { kind: 'title', title: `run ${i}` } })
        await writer.write({ t: 'text', v: `text of ${i}` })
        await writer.end()
      })
    )
    await sinkInternals(sink).tail.poll()
    const got = await Promise.all(readers)
    for (const [i, frames] of got.entries()) {
      assert.deepEqual(frames.map(strip), [
        { t: 'event', event: { kind: 'title', title: `run ${i}` } },
        { t: 'text', v: `text of ${i}` },
      ])
    }
    assert.deepEqual(calls.pages, [20])
    assert.equal(calls.page, 0)
    await other.shutdown()
  })

  test('a stream with more rows than a shared read takes, or rows past its bytes, is read on alone; every reader gets every frame in order', async ({
    assert,
  }) => {
    const { sink, other, calls } = await twoReplicas({ windowBytes: 4096 })
    const small = runId('small')
    const many = runId('many')
    const large = runId('large')
    const ids = [small, many, large]
    const writers = await Promise.all(ids.map((id) => other.open(id)))
    const readers = ids.map((id) => collect(sink.subscribe(id)))
    await ready(sink, ids)
    calls.page = 0
    calls.pages = []
    const expected: StreamFrame[][] = [[], [], []]
    const write = async (i: number, frame: StreamFrame) => {
      expected[i].push(frame)
      await writers[i].write(frame)
    }
    await write(0, { t: 'event', event: { kind: 'title', title: 'small' } })
    for (let n = 0; n < DEFAULTS.tailBatchRows * 3; n++) {
      await write(1, { t: 'component', name: 'row', data: { n } })
    }
    // Past the shared read's budget (4096 bytes for the three): left out, read alone.
    await write(2, { t: 'component', name: 'card', data: { pad: 'x'.repeat(3000) } })
    await write(2, { t: 'component', name: 'card', data: { pad: 'y'.repeat(3000) } })
    for (const writer of writers) await writer.end()
    await sinkInternals(sink).tail.poll()
    const got = await Promise.all(readers)
    for (const [i, frames] of got.entries()) assert.deepEqual(frames.map(strip), expected[i])
    assert.deepEqual(calls.pages, [3])
    // `many` read on past its first rows, `large` read alone (a page each at least).
    assert.isAtLeast(calls.page, 2)
    await other.shutdown()
  })

  test('pages(): each stream from its seq, at most limit rows, bodies within the budget', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const a = runId('a')
    const b = runId('b')
    const c = runId('c')
    for (const id of [a, b, c]) {
      const writer = await sink.open(id)
      for (let n = 1; n <= 5; n++) {
        const pad = id === c ? 'z'.repeat(500) : ''
        await writer.write({ t: 'component', name: 'row', data: { n, pad } })
      }
      await writer.end()
    }
    const read = await sinkInternals(sink).reads.pages(
      [
        { runId: a, fromSeq: 2 },
        { runId: b, fromSeq: 5 },
        { runId: c, fromSeq: 1 },
      ],
      3,
      1000
    )
    const ns = (id: string) =>
      read.get(id)!.rows.map((row) => (row.kind === 'end' ? 'end' : JSON.parse(row.body).data.n))
    assert.deepEqual(ns(a), [2, 3, 4])
    assert.isTrue(read.get(a)!.more)
    assert.deepEqual(ns(b), [5, 'end'])
    assert.isFalse(read.get(b)!.more)
    // Three rows of over 500 bytes each would pass 1000 bytes: left out.
    assert.isFalse(read.has(c))
    // Rows over the per-row share (2000 / 4 rows) but within the budget: their bodies come in a
    // second read.
    const roomy = await sinkInternals(sink).reads.pages([{ runId: c, fromSeq: 4 }], 4, 2000)
    assert.deepEqual(
      roomy.get(c)!.rows.map((row) => (row.kind === 'end' ? 'end' : JSON.parse(row.body).data.n)),
      [4, 5, 'end']
    )
    assert.isFalse(roomy.get(c)!.more)
  })

  test('a stream read from its start takes whole pages: a burst of more than a page before the first read all arrives', async ({
    assert,
  }) => {
    // Seqs start at 1: a page "from seq 0" was one row short and said no more rows followed,
    // so a follower of a new stream stopped there and its reader waited for good.
    const { sink, db } = await setupSink({ notifier: 'poll', pollIntervalMs: 60_000, pageSize: 4 })
    const other = new LucidTokenStreamSink(db, { notifier: 'poll', pollIntervalMs: 60_000 })
    const id = runId('burst')
    const writer = await other.open(id)
    const reader = collect(sink.subscribe(id))
    await sleep(100)
    const frames: StreamFrame[] = []
    for (let n = 0; n < 10; n++) frames.push({ t: 'component', name: 'row', data: { n } })
    for (const frame of frames) await writer.write(frame)
    await writer.end()
    await sinkInternals(sink).tail.poll()
    assert.deepEqual((await reader).map(strip), frames)
    const page = await sinkInternals(sink).reads.page(id, 0, 4, 1_000_000)
    assert.deepEqual(
      page.rows.map((row) => row.seq),
      [1, 2, 3, 4]
    )
    assert.isTrue(page.more)
    await other.shutdown()
  })

  test('1,100 streams woken at once are read 100 at a time (SQLite caps a query at depth 1000), and a lapsed writer among them still fails', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ notifier: 'poll', pollIntervalMs: 60_000 })
    const sizes: number[] = []
    const pages = sinkInternals(sink).reads.pages.bind(sinkInternals(sink).reads)
    sinkInternals(sink).reads.pages = (requests, ...rest) => {
      sizes.push(requests.length)
      return pages(requests, ...rest)
    }
    const ids = Array.from({ length: 1100 }, () => runId('many'))
    const at = Date.now()
    const row = (id: string, seq: number) => ({
      run_id: id,
      seq,
      kind: 'component',
      // Every other stream's second row is larger than a shared read takes in its first query.
      body: JSON.stringify({
        t: 'component',
        name: 'row',
        data: { seq, pad: 'p'.repeat(seq === 2 && id.endsWith('0') ? 2000 : 1) },
      }),
      component_id: null,
      superseded: false,
      created_at: at,
    })
    const insert = async (table: string, make: (id: string) => object) => {
      for (let i = 0; i < ids.length; i += 250) {
        await db
          .connection()
          .insertQuery()
          .table(table)
          .multiInsert(ids.slice(i, i + 250).map(make))
      }
    }
    await insert('agent_streams', (id) => ({
      run_id: id,
      last_seq: 1,
      rev: 1,
      status: 'open',
      lease_expires_at: at + 3_600_000,
      created_at: at,
      updated_at: at,
      ended_at: null,
    }))
    await insert('agent_stream_frames', (id) => row(id, 1))
    for (const id of ids) await sinkInternals(sink).tail.follow(id)
    // Another replica writes a row to each; the writer of the first one died (its lease lapsed).
    await insert('agent_stream_frames', (id) => row(id, 2))
    await db.from('agent_streams').update({ last_seq: 2, rev: 2 })
    await db
      .from('agent_streams')
      .where('run_id', ids[0])
      .update({ lease_expires_at: at - 1 })
    sizes.length = 0
    await sinkInternals(sink).tail.poll()
    assert.deepEqual(sizes, [...Array.from({ length: 11 }, () => 100)])
    // Each got its new row (the lapsed one also its failure: an error frame and an end).
    for (const id of ids.slice(1)) assert.equal(sinkInternals(sink).tail.windowLength(id), 1, id)
    assert.equal(sinkInternals(sink).tail.windowLength(ids[0]), 3)
    const lapsed = await db.from('agent_streams').where('run_id', ids[0]).first()
    assert.equal(lapsed.status, 'failed')
    for (const id of ids) sinkInternals(sink).tail.unfollow(id)
    await db.from('agent_streams').update({ status: 'ended', lease_expires_at: null })
  }).timeout(120_000)
})

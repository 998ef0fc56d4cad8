import { test } from '@japa/runner'
import { Feed } from '../src/follow/feed.js'
import type { StoredRow } from '../src/store/rows.js'
import type { StreamFrame } from '../src/core/frames.js'
import { DEFAULTS } from '../src/defaults.js'
import { LucidTokenStreamSink, sinkInternals } from '../src/sink/lucid_sink.js'
import { collect, runId, setupSink, sleep } from './helpers/sink.js'

const bytesOf = (body: string) => Buffer.byteLength(body, 'utf8')

/**
 * A stream whose rows differ in size and hold multi-byte characters (2, 3 and 4 UTF-8 bytes), so
 * a budget counted in characters or UTF-16 units would cut elsewhere: text rows (raw text) and
 * components (JSON) in turn.
 */
async function writeMixed(sink: Awaited<ReturnType<typeof setupSink>>['sink'], rows = 24) {
  const id = runId('bytes')
  const writer = await sink.open(id)
  for (let i = 0; i < rows / 2; i++) {
    await writer.write({ t: 'text', v: `${'é€😀'.repeat(1 + ((i * 7) % 13))}#${i}` })
    await writer.flush()
    const data = { i, pad: 'x'.repeat(40 + ((i * 31) % 200)), accent: 'ü'.repeat(i % 5) }
    await writer.write({ t: 'component', name: 'card', data })
  }
  await writer.end()
  return id
}

test.group('Byte budgets: store pages', () => {
  test('a page stops before the row that would pass the budget (UTF-8 bytes), never before its second row', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = await writeMixed(sink)
    const all = (await sinkInternals(sink).reads.page(id, 1, 1000, Number.MAX_SAFE_INTEGER)).rows
    assert.lengthOf(all, 25)
    const sizes = all.map((row) => bytesOf(row.body))
    // Budgets on, just under and just over every cumulative size, from several starts, with
    // row limits that make some rows small enough to come in the first read and others not.
    for (const limit of [3, 7, 1000]) {
      for (const from of [1, 2, 7]) {
        const rest = sizes.slice(from - 1, from - 1 + limit)
        const sums = rest.map((_, i) => rest.slice(0, i + 1).reduce((a, b) => a + b, 0))
        for (const budget of [0, 1, ...sums.flatMap((sum) => [sum - 1, sum, sum + 1])]) {
          const page = await sinkInternals(sink).reads.page(id, from, limit, budget)
          const fits = sums.filter((sum) => sum <= budget).length
          const expected = Math.min(rest.length, Math.max(2, fits))
          const where = `limit ${limit}, from ${from}, budget ${budget}`
          assert.deepEqual(page.rows, all.slice(from - 1, from - 1 + expected), where)
          assert.equal(page.more, expected < rest.length || rest.length === limit, where)
        }
      }
    }
    // The row limit still holds, and says more may follow.
    const limited = await sinkInternals(sink).reads.page(id, 1, 5, Number.MAX_SAFE_INTEGER)
    assert.deepEqual(
      limited.rows.map((row) => row.seq),
      [1, 2, 3, 4, 5]
    )
    assert.isTrue(limited.more)
    const last = await sinkInternals(sink).reads.page(id, 21, 5, Number.MAX_SAFE_INTEGER)
    assert.isTrue(last.more)
    assert.isFalse((await sinkInternals(sink).reads.page(id, 22, 5, Number.MAX_SAFE_INTEGER)).more)
  })

  test('every reader reads pages within readerBytes, whatever pageSize; what it yields is unchanged', async ({
    assert,
  }) => {
    const { sink: plain } = await setupSink()
    const id = await writeMixed(plain)
    const expected = {
      subscribed: await collect(plain.subscribe(id)),
      replayed: await collect(plain.replay(id, { appendedEnds: true }) as any),
      segments: await collect(plain.segments(id) as any, { limit: 25 }),
      stored: (await collect(plain.storedRows(id) as any)).flat(),
    }
    const { sink } = await setupSink({ pageSize: 5000, readerBytes: 300, windowBytes: 200 }, false)
    const budgets: number[] = []
    const page = sinkInternals(sink).reads.page.bind(sinkInternals(sink).reads)
    sinkInternals(sink).reads.page = async (run, fromSeq, limit, maxBytes, options) => {
      budgets.push(maxBytes)
      const read = await page(run, fromSeq, limit, maxBytes, options)
      const held = read.rows.slice(2).reduce((sum, row) => sum + bytesOf(row.body), 0)
      assert.isAtMost(held, maxBytes)
      return read
    }
    assert.deepEqual(await collect(sink.subscribe(id)), expected.subscribed)
    assert.deepEqual(
      await collect(sink.replay(id, { appendedEnds: true }) as any),
      expected.replayed
    )
    assert.deepEqual(await collect(sink.segments(id) as any, { limit: 25 }), expected.segments)
    assert.deepEqual((await collect(sink.storedRows(id) as any)).flat(), expected.stored)
    assert.isAbove(budgets.length, 20, 'many small pages, not one page of 5000 rows')
    // Readers' pages use readerBytes; the replica's tail, woken by a NOTIFY or its safety-net
    // poll at any moment, reads within windowBytes. No read goes unbounded.
    assert.include(budgets, 300)
    assert.includeMembers([300, 200], [...new Set(budgets)])
  })

  test('the defaults are 1 MiB per reader and per window', ({ assert }) => {
    assert.equal(DEFAULTS.readerBytes, 1024 * 1024)
    assert.equal(DEFAULTS.windowBytes, 1024 * 1024)
  })
})

test.group('Byte budgets: the shared feed window', () => {
  const row = (seq: number, bytes: number): StoredRow => ({
    seq,
    kind: 'component',
    body: JSON.stringify({ t: 'component', name: 'c', data: 'x'.repeat(bytes - 38) }),
    componentId: null,
    superseded: false,
  })

  test('keeps at most maxBytes (its newest delivery whatever its size) and hands out batches within a budget', ({
    assert,
  }) => {
    const feed = new Feed('r', 512, 1000)
    feed.reset(null)
    feed.apply([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((seq) => row(seq, 300)))
    assert.equal(bytesOf(row(1, 300).body), 300)
    assert.equal(feed.length, 3)
    assert.equal(feed.bytes, 900)
    // Before the window: the store. Inside it: batches stop before the byte budget.
    assert.isNull(feed.after({ seq: 6 }, 500, 0))
    assert.deepEqual(
      feed.after({ seq: 7 }, 500, 0, 650)!.map((d) => d.to.seq),
      [8, 9]
    )
    assert.deepEqual(
      feed.after({ seq: 7 }, 500, 0, 10)!.map((d) => d.to.seq),
      [8]
    )
    assert.deepEqual(
      feed.after({ seq: 7 }, 500, 0)!.map((d) => d.to.seq),
      [8, 9, 10]
    )
    // One delivery larger than the window: it alone stays.
    feed.apply([row(11, 5000)])
    assert.equal(feed.length, 1)
    assert.equal(feed.bytes, 5000)
    assert.isNull(feed.after({ seq: 9 }, 500, 0))
    assert.deepEqual(
      feed.after({ seq: 10 }, 500, 0, 10)!.map((d) => d.to.seq),
      [11]
    )
    // Text counts its UTF-8 bytes, sliced after a cursor inside the row too.
    feed.apply([{ seq: 12, kind: 'text', body: '😀😀😀', componentId: null, superseded: false }])
    assert.deepEqual(
      feed.after({ seq: 12, offset: 2 }, 500, 0)!.map((d) => [d.text, d.bytes]),
      [['😀😀', 8]]
    )
  })

  test('a followed live stream keeps no more than windowBytes in memory, and its tail reads no more at once', async ({
    assert,
  }) => {
    // The reader's replica follows a stream another replica writes: its tail reads the store.
    const { sink, db } = await setupSink({ windowBytes: 4096, pollIntervalMs: 20 })
    const other = new LucidTokenStreamSink(db, { pollIntervalMs: 20 })
    const id = runId('window')
    const writer = await other.open(id)
    const budgets: number[] = []
    const page = sinkInternals(sink).reads.page.bind(sinkInternals(sink).reads)
    sinkInternals(sink).reads.page = async (run, fromSeq, limit, maxBytes, options) => {
      budgets.push(maxBytes)
      return page(run, fromSeq, limit, maxBytes, options)
    }
    const reader = collect(sink.subscribe(id))
    await sinkInternals(sink).tail.follow(id)
    let most = 0
    const sampling = setInterval(
      () => (most = Math.max(most, sinkInternals(sink).tail.windowBytes(id))),
      1
    )
    for (let i = 0; i < 40; i++) {
      const frame: StreamFrame = { t: 'component', name: 'card', data: { pad: 'y'.repeat(1000) } }
      await writer.write(frame)
      // Several frames in one read now and then: a tail page cut by bytes.
      if (i % 10 === 0) await sleep(60)
    }
    await writer.end()
    assert.lengthOf(await reader, 40)
    clearInterval(sampling)
    assert.isAbove(most, 0)
    assert.isAtMost(most, 4096)
    assert.isAtMost(sinkInternals(sink).tail.windowBytes(id), 4096)
    assert.include(budgets, 4096)
    sinkInternals(sink).tail.unfollow(id)
    await other.shutdown()
  })
})

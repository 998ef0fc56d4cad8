import { test } from '@japa/runner'
import { StoreUnavailableError } from '../src/errors.js'
import { FAILURE_SENTENCES, type StreamFrame } from '../src/core/frames.js'
import { sinkInternals, type LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { isTransientError } from '../src/store/transient.js'
import { DIALECT } from './helpers/db.js'
import { collect, countRows, runId, setupSink, sleep, textOf } from './helpers/sink.js'
import { setupRunner } from './helpers/parking.js'
import type { AgentRunner } from '../src/runner/contract.js'

/**
 * Issue 10 item 19, the parts a fault can be injected into on every database (the restart of a
 * real server is tests/db_restart.spec.ts): commits whose outcome is unknown, the outage buffer
 * and its bounds, readers' retried reads, lapsed leases after an outage, a COMMIT that fails.
 */

/** What a driver throws when the database is not there. */
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })

/**
 * Wrap the sink's commit: `fault(n)` decides, for the n-th call (from 1), to fail `before` the
 * commit (nothing stored), `after` it (stored, but the reply lost: the outcome unknown), or not.
 */
function injectCommitFaults(
  sink: LucidTokenStreamSink,
  fault: (n: number) => 'before' | 'after' | null
) {
  const { store } = sinkInternals(sink)
  const commit = store.commit.bind(store)
  let n = 0
  store.commit = async (...args: Parameters<typeof commit>) => {
    const what = fault(++n)
    if (what === 'before') throw refused()
    const result = await commit(...args)
    if (what === 'after') throw refused()
    return result
  }
  return { calls: () => n }
}

async function storedRows(sink: LucidTokenStreamSink, id: string) {
  const rows = []
  for await (const page of sink.storedRows(id)) rows.push(...page)
  return rows
}

function assertGapFree(assert: any, rows: { seq: number }[]) {
  assert.deepEqual(
    rows.map((row) => row.seq),
    rows.map((_, i) => i + 1)
  )
}

test.group('Database outage | commits whose outcome is unknown', () => {
  test('a commit that landed but whose reply was lost is checked, never written twice', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 20 })
    const id = runId()
    const writer = await sink.open(id)
    // Every commit lands and then "loses its connection" once: grown text, new rows, the end.
    const seen = new Set<number>()
    let attempt = 0
    injectCommitFaults(sink, () => {
      attempt++
      // Odd attempts fail after committing; the retry (even) must find them stored.
      if (attempt % 2 === 1) {
        seen.add(attempt)
        return 'after'
      }
      return null
    })
    const reader = collect(sink.subscribe(id))
    const frames: StreamFrame[] = [
      { t: 'text', v: 'one ' },
      { t: 'text', v: 'two ' },
      { t: 'text', v: 'three ' },
      { t: 'component', id: 'c', name: 'card', data: { n: 1 } },
      { t: 'text', v: 'four ' },
      { t: 'approval', runId: id, id: 'a1', toolName: 'x', input: {} },
      { t: 'text', v: 'five' },
    ]
    for (const frame of frames) {
      await writer.write(frame)
      await sleep(5)
    }
    await writer.end()

    const rows = await storedRows(sink, id)
    assertGapFree(assert, rows)
    assert.equal(
      textOf(rows.filter((r) => r.kind === 'text').map((r) => ({ t: 'text', v: r.body }))),
      'one two three four five'
    )
    assert.deepEqual(
      rows.map((row) => row.kind),
      ['text', 'component', 'text', 'approval', 'text', 'end']
    )
    const got = await reader
    assert.equal(textOf(got), 'one two three four five')
    assert.deepEqual(
      got.filter((f) => f.t !== 'text').map((f) => f.t),
      ['component', 'approval']
    )
    assert.isAbove(seen.size, 3)
    assert.equal((await sink.head(id))!.status, 'ended')
  })

  test('a commit that failed before COMMIT is retried and stored once, in order', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 20 })
    const id = runId()
    const writer = await sink.open(id)
    injectCommitFaults(sink, (n) => (n % 3 !== 0 ? 'before' : null))
    for (let i = 0; i < 10; i++) await writer.write({ t: 'text', v: `w${i} ` })
    await writer.write({ t: 'event', event: { kind: 'step-finish' } })
    await writer.end()
    const rows = await storedRows(sink, id)
    assertGapFree(assert, rows)
    assert.equal(rows[0].body, Array.from({ length: 10 }, (_, i) => `w${i} `).join(''))
    assert.deepEqual(
      rows.map((row) => row.kind),
      ['text', 'event', 'end']
    )
  })
  test('a retry that finds its commit landed publishes it after commit (rev unknown)', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId()
    await sink.open(id)
    const frame = { t: 'event', event: {} } as StreamFrame
    const first = await sinkInternals(sink).store.commit(id, { frames: [frame], token: 'tok.1' })
    // The first attempt's COMMIT landed but was not confirmed: nothing was published for it
    // after commit (Redis); the retry that finds it stored is what tells other replicas.
    const published: string[] = []
    ;(
      sinkInternals(sink).store as { committed?: (runId: string, rev?: number) => void }
    ).committed = (run, rev) => published.push(rev === undefined ? run : `${run} ${rev}`)
    const again = await sinkInternals(sink).store.commit(id, {
      frames: [frame],
      token: 'tok.1',
      retried: true,
      sinceSeq: 1,
    })
    assert.isTrue(again!.landed)
    assert.deepEqual(
      again!.rows.map((r) => r.seq),
      first!.rows.map((r) => r.seq)
    )
    assert.deepEqual(published, [id])
    assert.lengthOf(await storedRows(sink, id), 1)
  })
})

test.group('Database outage | the writer holds frames, within bounds', () => {
  test('while the database is away write() takes frames at once; they land in order after', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 10 })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'before ' })
    let down = true
    injectCommitFaults(sink, () => (down ? 'before' : null))
    const reader = collect(sink.subscribe(id))
    const waits: number[] = []
    for (let i = 0; i < 20; i++) {
      const started = Date.now()
      await writer.write(
        i % 5 === 4 ? { t: 'event', event: { kind: 'step-finish' } } : { t: 'text', v: `w${i} ` }
      )
      waits.push(Date.now() - started)
      await sleep(10)
    }
    assert.isNotNull(writer.outageSince)
    // Every write after the first failed commit was acknowledged without waiting for the database.
    assert.isBelow(Math.max(...waits.slice(2)), 100)
    down = false
    await writer.end()
    const rows = await storedRows(sink, id)
    assertGapFree(assert, rows)
    const expected =
      'before ' + Array.from({ length: 20 }, (_, i) => (i % 5 === 4 ? '' : `w${i} `)).join('')
    assert.equal(
      textOf(rows.filter((r) => r.kind === 'text').map((r) => ({ t: 'text', v: r.body }))),
      expected
    )
    assert.equal(rows.filter((r) => r.kind === 'event').length, 4)
    assert.equal(textOf(await reader), expected)
    assert.isNull(writer.outageSince)
  })

  test("a reopened writer's first state frame in an outage waits for the stored state, then lands checked", async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 10 })
    const id = runId()
    const first = await sink.open(id)
    await first.write({ t: 'event', event: { kind: 'state', snapshot: { n: 1 } } })
    await first.end()
    // A resume reopens the stream; its first state frame needs the stored state, and the
    // database is away: every read of it and every commit fails until it is back.
    const second = await sink.open(id)
    let down = true
    injectCommitFaults(sink, () => (down ? 'before' : null))
    const { store } = sinkInternals(sink)
    const client = store.client
    const away = new Proxy(client, {
      get: (target, key) =>
        key === 'from'
          ? () => {
              throw refused()
            }
          : Reflect.get(target, key),
    })
    Object.defineProperty(store, 'client', {
      configurable: true,
      get: () => (down ? away : client),
    })
    try {
      const delta = [
        { op: 'test', path: '/n', value: 1 },
        { op: 'replace', path: '/n', value: 2 },
      ]
      const written = second.write({ t: 'event', event: { kind: 'state', delta } } as StreamFrame)
      written.catch(() => {})
      await sleep(150)
      down = false
      await written
      await second.end()
    } finally {
      delete (store as any).client
    }
    const kinds = (await storedRows(sink, id))
      .filter((row) => row.kind === 'event')
      .map((row) => JSON.parse(row.body).event)
    assert.deepEqual(
      kinds.filter((event) => event.kind === 'state'),
      [
        { kind: 'state', snapshot: { n: 1 } },
        {
          kind: 'state',
          delta: [
            { op: 'test', path: '/n', value: 1 },
            { op: 'replace', path: '/n', value: 2 },
          ],
        },
      ]
    )
  })

  test('a pair split across writes held during an outage is stored whole; a lone half as U+FFFD', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 10 })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'before ' })
    let down = true
    injectCommitFaults(sink, () => (down ? 'before' : null))
    await writer.write({ t: 'text', v: 'Smile \uD83D' })
    await writer.write({ t: 'text', v: '\uDE00 done.' })
    await writer.write({ t: 'text', v: ' Half \uD83D' })
    await writer.write({ t: 'event', event: { kind: 'step-finish' } })
    // A lone surrogate inside one write is still refused while the database is away.
    await assert.rejects(() => writer.write({ t: 'text', v: 'a\uD83Db' }))
    assert.isNotNull(writer.outageSince)
    down = false
    await writer.end()
    const rows = await storedRows(sink, id)
    assertGapFree(assert, rows)
    assert.deepEqual(
      rows.map((r) => (r.kind === 'text' ? r.body : r.kind)),
      ['before Smile \u{1F600} done. Half \uFFFD', 'event', 'end']
    )
  })

  test('past the outage bound the run is lost at once; run_failed and the end once it is back', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 10, outageBoundMs: 300 })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'kept ' })
    await writer.flush()
    let down = true
    injectCommitFaults(sink, () => (down ? 'before' : null))
    const lost: number[] = []
    writer.onLost = () => lost.push(Date.now())
    const reader = collect(sink.subscribe(id))
    const started = Date.now()
    await writer.write({ t: 'event', event: { kind: 'step-start' } })
    await writer.write({ t: 'text', v: 'dropped' })
    await sleep(450)
    assert.lengthOf(lost, 1)
    assert.isBelow(lost[0] - started, 450)
    await assert.rejects(() => writer.write({ t: 'text', v: 'x' }), StoreUnavailableError)
    await assert.rejects(() => writer.end(), StoreUnavailableError)
    down = false
    const got = await reader
    assert.deepEqual(got.at(-1), {
      t: 'error',
      code: 'run_failed',
      message: FAILURE_SENTENCES.run_failed,
      cursor: got.at(-1)!.cursor,
    })
    assert.equal(textOf(got), 'kept ')
    const rows = await storedRows(sink, id)
    assertGapFree(assert, rows)
    assert.deepEqual(
      rows.map((row) => row.kind),
      ['text', 'error', 'end']
    )
    assert.equal((await sink.head(id))!.status, 'failed')
    assert.isFalse(writer.leasing)
  })

  test('past the buffer bound (bytes) the run is lost at once', async ({ assert }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 10, outageBufferBytes: 1000 })
    const id = runId()
    const writer = await sink.open(id)
    let down = true
    injectCommitFaults(sink, () => (down ? 'before' : null))
    await writer.write({ t: 'text', v: 'first' })
    await sleep(30)
    let thrown: unknown = null
    let written = 0
    for (let i = 0; i < 100 && !thrown; i++) {
      try {
        await writer.write({
          t: 'component',
          id: `c${i}`,
          name: 'card',
          data: { pad: 'x'.repeat(100) },
        })
        written++
      } catch (error) {
        thrown = error
      }
    }
    assert.instanceOf(thrown, StoreUnavailableError)
    assert.equal((thrown as StoreUnavailableError).reason, 'buffer')
    assert.isBelow(written, 10)
    down = false
    const got = await collect(sink.subscribe(id))
    assert.equal(got.at(-1)!.t, 'error')
    assert.equal((await sink.head(id))!.status, 'failed')
  })
})

test.group('Database outage | the driver', () => {
  test('a park whose commit reply was lost parks once (its rows are not written twice)', async ({
    assert,
  }) => {
    const runner: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({ t: 'text', v: 'May I? ' })
        await ctx.writer.write({
          t: 'approval',
          runId: ctx.runId,
          id: 'call_1',
          toolName: 'pay',
          input: { n: 1 },
        })
        return { status: 'parked', checkpoint: { at: 1 } }
      },
      resume: async () => ({ status: 'finished' }),
    }
    const { sink, driver, db } = await setupRunner(runner)
    // Every commit lands, then its reply is lost once: the park hook and the checkpoint run in
    // those commits and must not run again.
    injectCommitFaults(sink, (n) => (n % 2 === 1 ? 'after' : null))
    const id = runId()
    const started = await driver.start({ runId: id })
    assert.equal((await started.done).status, 'parked')
    assert.equal(await countRows(db, 'agent_approvals', id), 1)
    const suspensions = await db.connection().from('agent_suspensions').where('run_id', id)
    assert.deepEqual(
      suspensions.map((row: any) => row.status),
      ['parked']
    )
    const rows = await storedRows(sink, id)
    assertGapFree(assert, rows)
    assert.deepEqual(
      rows.map((row) => row.kind),
      ['text', 'approval', 'end']
    )
  })

  test('a run that ends while the database is away writes its outcome once it is back', async ({
    assert,
  }) => {
    let down = false
    const runner: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({ t: 'text', v: 'all ' })
        down = true
        await ctx.writer.write({ t: 'text', v: 'of it' })
        setTimeout(() => (down = false), 300)
        return { status: 'finished' }
      },
      resume: async () => ({ status: 'finished' }),
    }
    const { sink, driver, parkingStore } = await setupRunner(runner)
    injectCommitFaults(sink, () => (down ? 'before' : null))
    const abandon = parkingStore.parks.abandon.bind(parkingStore.parks)
    parkingStore.parks.abandon = async (...args: Parameters<typeof abandon>) => {
      if (down) throw refused()
      return abandon(...args)
    }
    const id = runId()
    const started = await driver.start({ runId: id })
    assert.deepEqual(await started.done, { status: 'finished' })
    const got = await collect(sink.subscribe(id))
    assert.equal(textOf(got), 'all of it')
    assert.notInclude(
      got.map((f) => f.t),
      'error'
    )
    assert.equal((await sink.head(id))!.status, 'ended')
  })
  test('a cancelled run whose abandon lost its reply still denies every call it asked', async ({
    assert,
  }) => {
    const runner: AgentRunner = {
      async start(ctx) {
        for (const id of ['a', 'b']) {
          await ctx.writer.write({
            t: 'approval',
            runId: ctx.runId,
            id,
            toolName: 'act',
            input: {},
          })
        }
        return { status: 'cancelled' }
      },
      resume: async () => ({ status: 'finished' }),
    }
    const { sink, driver, parkingStore } = await setupRunner(runner)
    // The first abandon lands whole, then its reply is lost: the retry finds nothing open.
    const abandon = parkingStore.parks.abandon.bind(parkingStore.parks)
    let attempts = 0
    parkingStore.parks.abandon = async (...args: Parameters<typeof abandon>) => {
      const calls = await abandon(...args)
      if (++attempts === 1) throw refused()
      return calls
    }
    const id = runId()
    const started = await driver.start({ runId: id })
    assert.deepEqual(await started.done, { status: 'cancelled' })
    assert.equal(attempts, 2)
    const denied = (await collect(sink.subscribe(id)))
      .filter((f: any) => f.t === 'event' && f.event.kind === 'tool-output-denied')
      .map((f: any) => f.event.id)
    assert.deepEqual(denied, ['a', 'b'])
  })
})

test.group('Database outage | readers and leases', () => {
  test('a reader behind the window retries its page reads and resumes', async ({ assert }) => {
    const { sink } = await setupSink({ pageSize: 4, windowSize: 2 })
    const id = runId()
    const writer = await sink.open(id)
    for (let i = 0; i < 12; i++)
      await writer.write({ t: 'event', event: { kind: 'title', title: `k${i}` } })
    await writer.end()
    const page = sinkInternals(sink).reads.page.bind(sinkInternals(sink).reads)
    let calls = 0
    sinkInternals(sink).reads.page = async (...args: Parameters<typeof page>) => {
      if (++calls % 2 === 1) throw refused()
      return page(...args)
    }
    const got = await collect(sink.subscribe(id))
    assert.deepEqual(
      got.map((f: any) => f.event.title),
      Array.from({ length: 12 }, (_, i) => `k${i}`)
    )
    const replayed = []
    for await (const frame of sink.replay(id)) replayed.push(frame)
    assert.lengthOf(replayed, 13)
  })

  test('a lease that lapsed while the database was away is not failed before its grace', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ leaseMs: 300, pollIntervalMs: 20, notifier: 'poll' })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'alive' })
    const frames: string[] = []
    const reading = (async () => {
      for await (const frame of sink.subscribe(id)) frames.push(frame.t)
    })()
    // The database "goes away" for the pollers long enough for the lease to lapse, and the
    // writer cannot renew meanwhile.
    writer.release()
    const heads = sinkInternals(sink).reads.heads.bind(sinkInternals(sink).reads)
    let down = true
    sinkInternals(sink).reads.heads = async (...args: Parameters<typeof heads>) => {
      if (down) throw refused()
      return heads(...args)
    }
    await sleep(450)
    down = false
    // Back: the lapsed lease waits a lease length of reachability before it is acted on.
    await sleep(150)
    assert.equal((await sink.head(id))!.status, 'open')
    await reading
    assert.deepEqual(frames, ['text', 'error'])
    assert.equal((await sink.head(id))!.status, 'failed')
  })
})

test.group('Database outage | which errors are transient', () => {
  test('connection losses, restarts, deadlocks: yes; anything else: no', ({ assert }) => {
    const error = (props: object) => Object.assign(new Error('x'), props)
    for (const transient of [
      error({ code: 'ECONNREFUSED' }),
      error({ code: 'ECONNRESET' }),
      error({ code: '57P01' }),
      error({ code: '57P03' }),
      error({ code: '08006' }),
      error({ code: '40P01' }),
      error({ code: 'PROTOCOL_CONNECTION_LOST' }),
      error({ code: 'ER_SERVER_SHUTDOWN' }),
      error({ errno: 2013 }),
      error({ code: 'ER_CONNECTION_KILLED', errno: 1927 }),
      error({ code: '57P02' }),
      error({ code: 'SQLITE_BUSY' }),
      new Error('Connection lost: The server closed the connection.'),
      new Error('terminating connection due to administrator command'),
      error({ name: 'KnexTimeoutError' }),
      new Error('insert ... - Connection terminated unexpectedly'),
      new Error("COMMIT; - Can't add new command when connection is in closed state"),
      new Error('COMMIT; - Client has encountered a connection error and is not queryable'),
    ]) {
      assert.isTrue(isTransientError(transient), String((transient as any).code ?? transient))
    }
    for (const permanent of [
      null,
      'ECONNREFUSED',
      error({ code: '23505' }),
      error({ code: 'ER_DUP_ENTRY', errno: 1062 }),
      error({ code: '42P01' }),
      new StoreUnavailableError('bound'),
      new Error('The stream of run "x" is not open for writing'),
    ]) {
      assert.isFalse(isTransientError(permanent), String(permanent))
    }
  })
})

test.group('Database outage | a BEGIN that fails', () => {
  test('is reported as the connection error (transient), and the writer retries it', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    // knex hands out a transaction whose BEGIN failed (a pooled connection the server dropped):
    // its queries then throw "Transaction query already complete", which is not the cause.
    const knexClient = (sinkInternals(sink).store.client.getWriteClient() as any).client
    const transaction = knexClient.transaction
    let begins = 0
    knexClient.transaction = function (...args: unknown[]) {
      const trx = transaction.apply(this, args)
      if (++begins <= 2) {
        // As knex does when BEGIN fails: the transaction is completed and its execution
        // promise rejected with the driver's error, yet it is handed out.
        trx.begin = function (this: any, connection: unknown) {
          const lost = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
          return this.query(connection, 'select 1', 2, lost)
        }
      }
      return trx
    }
    try {
      const error = await sinkInternals(sink)
        .store.commit(id, { frames: [{ t: 'event', event: {} } as StreamFrame] })
        .then(
          () => null,
          (e) => e
        )
      assert.isTrue(isTransientError(error), String(error))
      await writer.write({ t: 'event', event: { kind: 'title', title: 'kept' } })
      // Held while the database is "away", committed by the retry.
      await writer.flush()
      assert.equal(begins, 3)
    } finally {
      knexClient.transaction = transaction
    }
    await writer.end()
    assert.deepEqual(
      (await storedRows(sink, id)).map((r) => r.kind),
      ['event', 'end']
    )
  })
})

test.group('Database outage | a COMMIT that fails', () => {
  test('is not reported as stored, and nothing is published', async ({ assert }) => {
    const { sink, db } = await setupSink()
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'event', event: { kind: 'title', title: 'first' } })
    const frames: string[] = []
    const reading = (async () => {
      for await (const frame of sink.subscribe(id))
        frames.push((frame as any).event?.title ?? frame.t)
    })()
    await sleep(50)
    // The next transaction's own connection is killed from another one right before COMMIT.
    const client = sinkInternals(sink).store.client
    const transaction = client.transaction.bind(client)
    let armed = true
    client.transaction = (async (...args: any[]) => {
      const trx = await (transaction as any)(...args)
      if (armed) {
        armed = false
        const commit = trx.commit.bind(trx)
        trx.commit = async () => {
          if (DIALECT === 'pg') {
            const pid = (await trx.rawQuery('select pg_backend_pid() as pid')).rows[0].pid
            await db.connection().rawQuery('select pg_terminate_backend(?)', [pid])
          } else {
            const pid = (await trx.rawQuery('select connection_id() as pid'))[0][0].pid
            await db.connection().rawQuery(`kill ${Number(pid)}`)
          }
          await sleep(100)
          return commit()
        }
      }
      return trx
    }) as any
    // The after-commit hook (the Redis publish) hears only of confirmed commits.
    const published: string[] = []
    ;(
      sinkInternals(sink).store as { committed?: (runId: string, rev?: number) => void }
    ).committed = (run) => published.push(run)
    const error = await sink
      .append(id, { frames: [{ t: 'event', event: { kind: 'title', title: 'lost' } }] })
      .then(
        () => null,
        (e) => e
      )
    assert.isTrue(isTransientError(error), String(error))
    assert.deepEqual(published, [], 'published for a COMMIT whose outcome is unknown')
    await writer.write({ t: 'event', event: { kind: 'title', title: 'kept' } })
    await writer.end()
    await reading
    const titles = (await storedRows(sink, id)).map((r) =>
      r.kind === 'event' ? JSON.parse(r.body).event.title : r.kind
    )
    assert.deepEqual(titles, ['first', 'kept', 'end'])
    assert.deepEqual(frames, ['first', 'kept'])
  }).skip(DIALECT === 'sqlite', 'needs a server connection to kill')
})

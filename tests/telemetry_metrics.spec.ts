import { test } from '@japa/runner'
import { metrics } from '@opentelemetry/api'
import type { AgentRunner, RunContext } from '../src/runner/contract.js'
import { ATTRIBUTE, METRIC, instruments } from '../src/telemetry/metrics/index.js'
import { DecisionLapsedError } from '../src/errors.js'
import { DIALECT } from './helpers/db.js'
import { installMeterProvider } from './helpers/otel_metrics.js'
import { setupParking, setupRunner } from './helpers/parking.js'
import { runInput } from './helpers/http.js'
import { redisChannel, redisNotifier, redisNotifierOf, until } from './helpers/redis.js'
import { runId, setupSink, sleep } from './helpers/sink.js'

const alice = { id: 'alice-principal-7' }
const SECRET_TEXT = 'the-secret-words ✓ é'

/** Asks approval for `call_a`, then parks; finishes when resumed. */
const asking: AgentRunner = {
  async start(ctx: RunContext) {
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'call_a',
      toolName: 'send',
      input: {},
    })
    return { status: 'parked', checkpoint: {} }
  },
  async resume(ctx: RunContext) {
    await ctx.writer.write({ t: 'text', v: SECRET_TEXT })
    return { status: 'finished' }
  },
}

/** Every attribute value of every point collected: none may name a run, a principal or text. */
async function attributeValues(meter: ReturnType<typeof installMeterProvider>) {
  const values: string[] = []
  const keys = new Set<string>()
  for (const metric of await meter.collect()) {
    for (const point of metric.dataPoints) {
      for (const [key, value] of Object.entries(point.attributes)) {
        keys.add(key)
        values.push(String(value))
      }
    }
  }
  return { values, keys }
}

test.group('telemetry metrics', () => {
  test('frames and bytes written are what the sink stored, by database and kind', async ({
    assert,
  }) => {
    const meter = installMeterProvider()
    const { db, sink } = await setupSink()
    const id = runId('metrics')
    const writer = await sink.open(id)
    const N = 5
    for (let i = 0; i < N; i++) {
      await writer.write({ t: 'component', name: 'card', data: { i, note: 'ü'.repeat(i) } })
    }
    // Text: one row written at once, the next pieces held and grown into it.
    await writer.write({ t: 'text', v: 'héllo ' })
    await writer.write({ t: 'text', v: SECRET_TEXT })
    await writer.end()

    const rows: { kind: string; body: string }[] = await db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', id)
      .select('kind', 'body')
    const stored = rows.filter((row) => row.kind !== 'end')
    const bytes = rows.reduce((sum, row) => sum + Buffer.byteLength(row.body), 0)
    const system = { postgres: 'postgresql', pg: 'postgresql', mysql: 'mysql', sqlite: 'sqlite' }[
      DIALECT
    ]
    assert.equal(await meter.value(METRIC.framesWritten, { [ATTRIBUTE.frameKind]: 'component' }), N)
    assert.equal(await meter.value(METRIC.framesWritten), stored.length)
    assert.equal(
      await meter.value(METRIC.framesWritten, { [ATTRIBUTE.dbSystem]: system }),
      stored.length
    )
    assert.equal(await meter.value(METRIC.bytesWritten), bytes)
    assert.isAbove(bytes, 0)
    const groups = await meter.histogram(METRIC.groupCommitStreams)
    assert.isAbove(groups.count, 0)
    assert.isAtLeast(groups.sum, groups.count)
    const metric = (await meter.collect()).find((m) => m.descriptor.name === METRIC.bytesWritten)
    assert.equal(metric?.descriptor.unit, 'By')
  })

  test('held text counts in the outage buffer gauge until it is committed', async ({ assert }) => {
    const meter = installMeterProvider()
    const { sink } = await setupSink({ coalesceWindowMs: 60_000 })
    const writer = await sink.open(runId('metrics'))
    await writer.write({ t: 'text', v: 'first ' })
    // Within the window: held, not yet committed.
    await writer.write({ t: 'text', v: 'ñandú ✓' })
    assert.equal(await meter.value(METRIC.outageBufferUsage), Buffer.byteLength('ñandú ✓'))
    await writer.flush()
    assert.equal(await meter.value(METRIC.outageBufferUsage), 0)
    await writer.end()
  })

  test('a live reader counts 1 while it follows and 0 once closed; replays count rows read', async ({
    assert,
  }) => {
    const meter = installMeterProvider()
    const { sink } = await setupSink()
    const id = runId('metrics')
    const writer = await sink.open(id)
    await writer.write({ t: 'component', name: 'card', data: {} })
    const reader = sink.subscribe(id)[Symbol.asyncIterator]()
    await reader.next()
    assert.equal(await meter.value(METRIC.liveReaders), 1)
    // Writes a reader follows: on PostgreSQL the NOTIFY of this replica's commits comes back.
    for (let i = 0; i < 4; i++) {
      await writer.write({ t: 'component', name: 'card', data: { i } })
      await reader.next()
      await sleep(30)
    }
    await reader.return!()
    assert.equal(await meter.value(METRIC.liveReaders), 0)
    await writer.end()
    if (DIALECT === 'pg') {
      const lag = await meter.histogram(METRIC.notifierLag, { [ATTRIBUTE.notifier]: 'pg' })
      assert.isAtLeast(lag.count, 1)
      assert.isBelow(lag.sum / lag.count, 5)
    }
    const before = await meter.value(METRIC.replayRows)
    let replayed = 0
    for await (const item of sink.replay(id)) if (item) replayed++
    assert.isAtLeast(replayed, 5)
    assert.isAtLeast((await meter.value(METRIC.replayRows)) - before, replayed)
  })

  test('the Redis notifier: a commit to its wake-up heard back, as its lag', async ({ assert }) => {
    const meter = installMeterProvider()
    const { sink } = await setupSink({ notifier: redisNotifier({ channel: redisChannel() }) })
    const id = runId('metrics')
    const writer = await sink.open(id)
    const reader = sink.subscribe(id)[Symbol.asyncIterator]()
    await writer.write({ t: 'component', name: 'card', data: {} })
    await reader.next()
    await until(() => redisNotifierOf(sink).listening, 5000, 'subscription')
    for (let i = 0; i < 4; i++) {
      await writer.write({ t: 'component', name: 'card', data: { i } })
      await reader.next()
      await sleep(30)
    }
    await reader.return!()
    await writer.end()
    const lag = await meter.histogram(METRIC.notifierLag, { [ATTRIBUTE.notifier]: 'redis' })
    assert.isAtLeast(lag.count, 1)
    assert.isAbove(lag.sum, 0)
    assert.isBelow(lag.sum / lag.count, 1)
    assert.equal(
      (await meter.histogram(METRIC.notifierLag, { [ATTRIBUTE.notifier]: 'pg' })).count,
      0
    )
  })

  test('a park decided after a known delay: its duration, the resume delay, the run counted', async ({
    assert,
  }) => {
    const meter = installMeterProvider()
    const stack = await setupRunner(asking)
    const id = runId('metrics')
    await (
      await stack.driver.start({ runId: id, principal: alice })
    ).done
    const delayMs = 400
    const asked = Date.now()
    await sleep(delayMs)
    const waited = (Date.now() - asked) / 1000
    await stack.parking.decisions.approve(id, 'call_a', { principal: alice })
    const decidedWithin = (Date.now() - asked) / 1000
    const park = await meter.histogram(METRIC.parkDuration, {
      [ATTRIBUTE.decision]: 'approved',
      [ATTRIBUTE.decidedVia]: 'api',
    })
    assert.equal(park.count, 1)
    // The ask committed before `asked`; the decision at most `decidedWithin` after it.
    assert.isAtLeast(park.sum, waited - 0.05)
    assert.isAtMost(park.sum, decidedWithin + 1)
    await stack.driver.settled()
    const resume = await meter.histogram(METRIC.resumeDelay)
    assert.equal(resume.count, 1)
    assert.isAtLeast(resume.sum, 0)
    assert.isBelow(resume.sum, 5)
    assert.equal(await meter.value(METRIC.runsStarted), 1)
    assert.equal(await meter.value(METRIC.runsEnded, { [ATTRIBUTE.outcome]: 'finished' }), 1)
    assert.equal((await meter.histogram(METRIC.parkDuration)).count, 1)

    // Nothing names a run, a principal or what was said.
    const { values, keys } = await attributeValues(meter)
    const allowed = new Set<string>(Object.values(ATTRIBUTE))
    for (const key of keys) assert.isTrue(allowed.has(key), key)
    for (const value of values) {
      assert.notInclude(value, id)
      assert.notInclude(value, alice.id)
      assert.notInclude(SECRET_TEXT, value)
      assert.isAtMost(value.length, 16)
    }
  })

  test('an expiry is counted once, however many times it is asked', async ({ assert }) => {
    const meter = installMeterProvider()
    const stack = await setupRunner(asking)
    stack.driver.tryResume = async () => false
    const id = runId('metrics')
    await (
      await stack.driver.start({ runId: id, principal: alice })
    ).done
    await stack.parking.decisions.expire(id, 'call_a')
    await assert.rejects(() => stack.parking.decisions.expire(id, 'call_a'), DecisionLapsedError)
    assert.equal(await stack.parking.sweeper.expireLapsed(), 0)
    assert.equal(await meter.value(METRIC.expiries), 1)
    const park = await meter.histogram(METRIC.parkDuration, {
      [ATTRIBUTE.decision]: 'expired',
      [ATTRIBUTE.decidedVia]: 'expiry',
    })
    assert.equal(park.count, 1)
  })

  test('a cancelled park is timed as cancelled, and no expiry', async ({ assert }) => {
    const meter = installMeterProvider()
    const stack = await setupRunner(asking)
    const id = runId('metrics')
    await (
      await stack.driver.start({ runId: id, principal: alice })
    ).done
    await stack.parking.decisions.cancel(id, { principal: alice })
    const park = await meter.histogram(METRIC.parkDuration, {
      [ATTRIBUTE.decision]: 'cancelled',
      [ATTRIBUTE.decidedVia]: 'cancel',
    })
    assert.equal(park.count, 1)
    assert.equal(await meter.value(METRIC.expiries), 0)
  })

  test('re-attaches are counted by door; a refused one is not', async ({ assert }) => {
    const meter = installMeterProvider()
    const stack = await setupParking()
    const thread = runId('thread')
    const run = runId('metrics')
    const started = await stack.door.run(runInput(thread, run), alice)
    assert.equal(started.kind, 'stream')
    if (started.kind === 'stream') await Array.fromAsync(started.events)
    assert.equal(await meter.value(METRIC.reattaches), 0)
    const again = await stack.door.reattach(run, undefined, alice)
    assert.equal(again.kind, 'stream')
    if (again.kind === 'stream') await Array.fromAsync(again.events)
    assert.equal((await stack.door.reattach(run, undefined, { id: 'mallory' })).kind, 'refused')
    assert.equal(
      await stack.door.reattach(run, 'not-a-cursor', alice).then((r) => r.kind),
      'refused'
    )
    assert.equal(await meter.value(METRIC.reattaches, { [ATTRIBUTE.door]: 'agui' }), 1)
    assert.equal(await meter.value(METRIC.reattaches), 1)
  })

  test('without an SDK nothing is made; a provider registered later is used', async ({
    assert,
  }) => {
    metrics.disable()
    assert.isNull(instruments())
    const meter = installMeterProvider()
    assert.isNotNull(instruments())
    const { sink } = await setupSink()
    const writer = await sink.open(runId('metrics'))
    await writer.write({ t: 'component', name: 'card', data: {} })
    await writer.end()
    assert.equal(await meter.value(METRIC.framesWritten), 1)
  })
})

import { existsSync } from 'node:fs'
import { test } from '@japa/runner'
import type { DeliveredFrame } from '../src/core/frames.js'
import { DIALECT } from './helpers/db.js'
import { LIBFAKETIME, Replica } from './helpers/replica.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'

/**
 * Issue 21 item 11: one replica's clock (Debian's libfaketime, 30 s ahead or behind) neither
 * fails the runs of another replica nor has its own failed: leases are in the database's time,
 * and the skewed replica says so (`E_CLOCK_SKEW`, with the skew measured). SQLite runs inside
 * each process, so its clock is each host's own: PostgreSQL and MySQL only.
 */
const SKIP = DIALECT === 'sqlite' || !existsSync(LIBFAKETIME)
const LEASE = { leaseMs: 2000 }
const WORDS = Array.from({ length: 12 }, (_, i) => `w${i} `)

/** The skew warnings a replica gave, as signed milliseconds. */
const skews = (replica: Replica) =>
  replica.warnings.filter((w) => w.code === 'E_CLOCK_SKEW').map((w) => w.skewMs!)

test.group('Clock skew | leases are in the database time', () => {
  test("a replica 30 s ahead follows another replica's run to its end, and logs its skew", async ({
    assert,
  }) => {
    const { sink } = await setupSink(LEASE)
    const replica = await Replica.start(LEASE, { faketime: '+30s' })
    const id = runId()
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: 'start ' })
    const frames: DeliveredFrame[] = []
    const reading = replica.subscribe(id, (frame) => frames.push(frame))
    await reading.ready
    // Past a lease length: a replica comparing in its own time fails the run at once.
    for (const word of WORDS) {
      await writer.write({ t: 'text', v: word })
      await sleep(250)
    }
    await writer.end()
    await reading.done
    assert.deepEqual(
      frames.map((frame) => frame.t),
      frames.map(() => 'text')
    )
    assert.equal(textOf(frames), `start ${WORDS.join('')}`)
    assert.equal((await sink.head(id))!.status, 'ended')
    const seen = skews(replica)
    assert.isAbove(seen.length, 0, 'the skewed replica warned')
    assert.isAbove(seen[0], 25_000)
    assert.isBelow(seen[0], 35_000)
  }).skip(SKIP, 'needs PostgreSQL or MySQL, and libfaketime')

  test('a replica 30 s behind keeps its own run alive for the others, and logs its skew', async ({
    assert,
  }) => {
    const { sink } = await setupSink(LEASE)
    const replica = await Replica.start(LEASE, { faketime: '-30s' })
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    const reading = collect(sink.subscribe(id), { timeoutMs: 30_000 })
    await replica.call({
      op: 'write',
      runId: id,
      frames: WORDS.map((v) => ({ t: 'text', v })),
      delayMs: 250,
    })
    await replica.call({ op: 'end', runId: id })
    const frames = await reading
    assert.deepEqual(
      frames.map((frame) => frame.t),
      frames.map(() => 'text')
    )
    assert.equal(textOf(frames), WORDS.join(''))
    assert.equal((await sink.head(id))!.status, 'ended')
    const seen = skews(replica)
    assert.isAbove(seen.length, 0, 'the skewed replica warned')
    assert.isBelow(seen[0], -25_000)
    assert.isAbove(seen[0], -35_000)
  }).skip(SKIP, 'needs PostgreSQL or MySQL, and libfaketime')

  test('the test process itself agrees with the database: no warning', async ({ assert }) => {
    const warnings: unknown[] = []
    const { sink } = await setupSink({ ...LEASE, onError: (error) => warnings.push(error) })
    const id = runId()
    const writer = await sink.open(id)
    await writer.end()
    assert.deepEqual(warnings, [])
  })
})

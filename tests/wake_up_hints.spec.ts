import { test } from '@japa/runner'
import fc from 'fast-check'
import type { DeliveredFrame } from '../src/core/frames.js'
import type { NotifierFactory, NotifierHandlers } from '../src/follow/notifiers/index.js'
import { notifiers } from '../src/follow/notifiers/index.js'
import { LucidTokenStreamSink, sinkInternals } from '../src/sink/lucid_sink.js'
import { parseWakeUp, wakeUpPayload } from '../src/store/wake_ups.js'
import { DIALECT } from './helpers/db.js'
import {
  redisChannel,
  redisClient,
  redisNotifier,
  redisNotifierOf,
  until,
} from './helpers/redis.js'
import { Replica } from './helpers/replica.js'
import { collect, runId, setupSink } from './helpers/sink.js'

/**
 * A wake-up is a hint. Whoever can publish on the channel (Redis) or NOTIFY (PostgreSQL) can make
 * a replica read a stream, nothing more: no payload makes it skip a frame, pin a revision, or wait
 * for the safety poll for the next real wake-up. The poll is a minute here, so a frame that comes
 * within the tests' bounds came through a wake-up; the tests also count polls (none may run).
 */

/** A minute: nothing in these tests may wait for the safety poll. */
const POLL = 60_000
/** Well under the poll: a frame a real wake-up announced must be there by then. */
const BOUND = 10_000

/** Revisions no stream has, and values that are not revisions at all. */
const hostileRev = fc.oneof(
  fc.constant(999_999_999_999_999),
  fc.constant(Number.MAX_SAFE_INTEGER),
  fc.constant(2 ** 53 + 2),
  fc.integer({ min: 1000, max: 2 ** 31 }),
  fc.integer({ min: -(2 ** 31), max: -1 }),
  fc.double(),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 0.5)
)

/** Payloads as they would arrive on a channel, for the stream `id`. */
function hostilePayload(id: string, maxLength: number) {
  return fc.oneof(
    hostileRev.map((rev) => `${id} ${rev}`),
    fc.bigInt({ min: 10n ** 15n, max: 10n ** 40n }).map((rev) => `${id} ${rev}`),
    fc.constantFrom(
      `${id} 999999999999999`,
      `${id} -1`,
      `${id} NaN`,
      `${id} 1e400`,
      `${id} Infinity`,
      `${id} 0x7fffffff`,
      `${id}  12`,
      `${id} 12 34`,
      `${id} 99999 extra`,
      ` ${id} 5`,
      `${id}\n99999`,
      '',
      ' ',
      `${'x'.repeat(192)} 1`
    ),
    fc.string({ maxLength: 64 }),
    fc.string({ maxLength: 64 }).map((tail) => `${id}${tail}`),
    fc.string({ minLength: 1, maxLength: 191 }).map((other) => `${other} 999999999999999`),
    fc.integer({ min: 1, max: maxLength }).map((length) => `${id} ${'9'.repeat(length)}`),
    fc.integer({ min: 1, max: maxLength }).map((length) => 'a'.repeat(length))
  )
}

/** A subscription read in the background. */
function gather(iterable: AsyncIterable<DeliveredFrame>) {
  const frames: DeliveredFrame[] = []
  const done = (async () => {
    for await (const frame of iterable) frames.push(frame)
  })()
  return { frames, done }
}

const titles = (frames: DeliveredFrame[]) => frames.map((frame: any) => frame.event?.title)

/** Count the polls of a sink's tail (the safety net: none may be needed). */
function countPolls(sink: LucidTokenStreamSink) {
  const tail = sinkInternals(sink).tail
  const poll = tail.poll.bind(tail)
  const counter = { polls: 0 }
  tail.poll = () => {
    counter.polls++
    return poll()
  }
  return counter
}

test.group('Wake-ups are hints', () => {
  test('the one grammar: a payload is read back only when it is one a writer sends', ({
    assert,
  }) => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_:.-]{1,191}$/),
        fc.option(fc.integer({ min: 0, max: 999_999_999_999_999 }), { nil: undefined }),
        (id, rev) => {
          assert.deepEqual(
            parseWakeUp(wakeUpPayload(id, rev)),
            rev === undefined ? [id] : [id, rev]
          )
        }
      )
    )
    fc.assert(
      fc.property(hostilePayload('run-1', 300), (payload) => {
        const wakeUp = parseWakeUp(payload)
        if (wakeUp === null) return
        // Whatever is accepted is a run id and a revision of the grammar, nothing else.
        assert.match(wakeUp[0], /^[A-Za-z0-9_:.-]{1,191}$/)
        if (wakeUp[1] !== undefined) assert.isTrue(Number.isSafeInteger(wakeUp[1]))
        assert.equal(wakeUpPayload(...wakeUp), payload)
      })
    )
  })

  test('no rev pins a feed: after any wake-ups, the next real one is read at once', async ({
    assert,
  }) => {
    // This replica hears wake-ups only from the test (its notifier hands the tail's handlers
    // over), and polls once a minute.
    let handlers: NotifierHandlers | null = null
    const capture: NotifierFactory = {
      name: 'test',
      create: () => ({
        notifiers: [
          { start: (given) => void (handlers = given), stop: async () => void (handlers = null) },
          ...notifiers.poll({ pollIntervalMs: POLL }).create({} as any).notifiers,
        ],
        notifyChannel: null,
        pollIntervalMs: POLL,
      }),
    }
    const { sink, db } = await setupSink({ notifier: capture })
    const polls = countPolls(sink)
    // The writer: another sink on the database, whose commits this replica hears of only from
    // the wake-ups the test sends.
    const other = new LucidTokenStreamSink(db, {
      notifier: notifiers.poll({ pollIntervalMs: POLL }),
    })
    try {
      const id = runId()
      const writer = await other.open(id)
      const reading = gather(sink.subscribe(id))
      await until(() => handlers !== null, BOUND, 'the notifier started')
      let n = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              runId: fc.oneof(fc.constant(id), fc.string({ maxLength: 300 })),
              rev: fc.oneof(hostileRev, fc.constant(undefined)),
            }),
            { maxLength: 20 }
          ),
          fc.boolean(),
          async (wakeUps, sameTurn) => {
            const title = `t${n++}`
            const hostile = () => {
              for (const wake of wakeUps) handlers!.wake(wake.runId, wake.rev as number)
            }
            if (!sameTurn) hostile()
            await writer.write({ t: 'event', event: { kind: 'title', title } })
            await writer.flush()
            const rev = (await other.head(id))!.rev
            // The real wake-up, alone or in the same turn as the others (before and after it).
            if (sameTurn) hostile()
            handlers!.wake(id, rev)
            if (sameTurn) hostile()
            await until(() => reading.frames.length === n, BOUND, `frame ${title}`)
          }
        ),
        { numRuns: 40 }
      )
      // A flood: 10,000 wake-ups with revs far ahead, then a real one.
      for (let i = 0; i < 10_000; i++) handlers!.wake(id, 999_999_999_999_999 - i)
      await writer.write({ t: 'event', event: { kind: 'title', title: `t${n++}` } })
      await writer.flush()
      handlers!.wake(id, (await other.head(id))!.rev)
      await until(() => reading.frames.length === n, BOUND, 'the frame after the flood')

      await writer.end()
      handlers!.wake(id, (await other.head(id))!.rev)
      await reading.done
      // Every frame once, in order: nothing skipped, nothing doubled.
      assert.deepEqual(
        titles(reading.frames),
        Array.from({ length: n }, (_, i) => `t${i}`)
      )
      assert.equal(polls.polls, 0, 'a frame waited for the safety poll')
    } finally {
      await other.shutdown()
    }
  }).timeout(120_000)

  test('Redis: no message on the channel slows or hides a frame another process writes', async ({
    assert,
  }) => {
    const channel = redisChannel()
    const { sink } = await setupSink({ pollIntervalMs: POLL, notifier: redisNotifier({ channel }) })
    const polls = countPolls(sink)
    const replica = await Replica.start({ pollIntervalMs: POLL }, { redis: { channel } })
    const publisher = redisClient()
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    const reading = gather(sink.subscribe(id))
    await until(() => redisNotifierOf(sink).listening, BOUND, 'subscription')
    const before = polls.polls
    let n = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(hostilePayload(id, 100_000), { maxLength: 20 }),
        async (payloads) => {
          for (const payload of payloads) await publisher.publish(channel, payload)
          const title = `t${n++}`
          await replica.call({
            op: 'write',
            runId: id,
            frames: [{ t: 'event', event: { kind: 'title', title } }],
          })
          await until(() => reading.frames.length === n, BOUND, `frame ${title}`)
        }
      ),
      { numRuns: 25 }
    )
    // A flood: 5,000 messages with revs far ahead (pipelined), then a real write.
    const flood = publisher.pipeline()
    for (let i = 0; i < 5000; i++) flood.publish(channel, `${id} ${999_999_999_999_999 - i}`)
    await flood.exec()
    await replica.call({
      op: 'write',
      runId: id,
      frames: [{ t: 'event', event: { kind: 'title', title: `t${n++}` } }],
    })
    await until(() => reading.frames.length === n, BOUND, 'the frame after the flood')
    await replica.call({ op: 'end', runId: id })
    await reading.done
    assert.deepEqual(
      titles(reading.frames),
      Array.from({ length: n }, (_, i) => `t${i}`)
    )
    assert.equal(polls.polls, before, 'a frame waited for the safety poll')
    // And what a later reader reads is the same.
    assert.deepEqual(titles(await collect(sink.subscribe(id))), titles(reading.frames))
  }).timeout(120_000)

  test('PostgreSQL: no NOTIFY on the channel slows or hides a frame another process writes', async ({
    assert,
  }) => {
    const notifyChannel = `hints_${process.pid}_${Date.now().toString(36)}`
    const { sink, db } = await setupSink({ pollIntervalMs: POLL, notifyChannel })
    const polls = countPolls(sink)
    const replica = await Replica.start({ pollIntervalMs: POLL, notifyChannel })
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    const reading = gather(sink.subscribe(id))
    // The LISTEN connection is up once a write wakes the reader.
    let n = 0
    const write = async () => {
      const title = `t${n++}`
      await replica.call({
        op: 'write',
        runId: id,
        frames: [{ t: 'event', event: { kind: 'title', title } }],
      })
      await until(() => reading.frames.length === n, BOUND, `frame ${title}`)
    }
    await write()
    const before = polls.polls
    const notify = (payload: string) =>
      db.connection().rawQuery('select pg_notify(?, ?)', [notifyChannel, payload])
    await fc.assert(
      // (NOTIFY payloads are at most 8000 bytes.)
      fc.asyncProperty(fc.array(hostilePayload(id, 7000), { maxLength: 20 }), async (payloads) => {
        for (const payload of payloads) await notify(payload)
        await write()
      }),
      { numRuns: 25 }
    )
    const flood = Array.from({ length: 2000 }, (_, i) => `${id} ${999_999_999_999_999 - i}`)
    for (let i = 0; i < flood.length; i += 100) {
      const chunk = flood.slice(i, i + 100)
      await db.connection().rawQuery(
        `select ${chunk.map(() => 'pg_notify(?, ?)').join(', ')}`,
        chunk.flatMap((payload) => [notifyChannel, payload])
      )
    }
    await write()
    await replica.call({ op: 'end', runId: id })
    await reading.done
    assert.deepEqual(
      titles(reading.frames),
      Array.from({ length: n }, (_, i) => `t${i}`)
    )
    assert.equal(polls.polls, before, 'a frame waited for the safety poll')
  })
    .skip(DIALECT !== 'pg', 'PostgreSQL only')
    .timeout(120_000)
})

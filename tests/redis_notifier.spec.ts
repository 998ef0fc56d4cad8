import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { test } from '@japa/runner'
import { Redis } from 'ioredis'
import type { DeliveredFrame } from '../src/core/frames.js'
import { notifiers } from '../src/follow/notifiers/index.js'
import { LucidTokenStreamSink, sinkInternals } from '../src/sink/lucid_sink.js'
import { setupApp } from './helpers/app.js'
import { resetTables } from './helpers/db.js'
import {
  clientIds,
  REDIS_URL,
  redisChannel,
  redisClient,
  redisNotifier,
  redisNotifierOf,
  until,
} from './helpers/redis.js'
import { Replica } from './helpers/replica.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'

/** Read a subscription into `frames` in the background; `done` settles when it ends. */
function gather(iterable: AsyncIterable<DeliveredFrame>) {
  const frames: DeliveredFrame[] = []
  const done = (async () => {
    for await (const frame of iterable) frames.push(frame)
  })()
  return { frames, done }
}

/** The messages published on a channel, as a raw subscriber sees them. */
async function listen(channel: string) {
  const raw = redisClient()
  const messages: string[] = []
  raw.on('message', (from: string, message: string) => {
    if (from === channel) messages.push(message)
  })
  await raw.subscribe(channel)
  return messages
}

test.group('Redis notifier (notifiers.redis())', () => {
  test('wakes a reader in another process through Redis while the poll is a minute', async ({
    assert,
  }) => {
    // Polling every minute: only Redis can deliver within the test's bounds.
    const channel = redisChannel()
    const { sink } = await setupSink({
      pollIntervalMs: 60_000,
      notifier: redisNotifier({ channel }),
    })
    assert.equal(sink.options.pollIntervalMs, 60_000)
    const replica = await Replica.start({ pollIntervalMs: 60_000 }, { redis: { channel } })
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    const reading = gather(sink.subscribe(id))
    await until(() => redisNotifierOf(sink).listening, 5000, 'subscription')
    const latencies: number[] = []
    for (let i = 0; i < 10; i++) {
      const sentAt = Date.now()
      await replica.call({
        op: 'write',
        runId: id,
        frames: [{ t: 'event', event: { kind: 'title', title: `t${i}` } }],
      })
      await until(() => reading.frames.length === i + 1, 3000, `frame ${i}`)
      latencies.push(Date.now() - sentAt)
    }
    await replica.call({ op: 'end', runId: id })
    await reading.done
    assert.deepEqual(
      reading.frames.map((f: any) => f.event.title),
      Array.from({ length: 10 }, (_, i) => `t${i}`)
    )
    assert.isBelow(Math.max(...latencies), 1000)

    // And the other way round: this process writes, the replica reads.
    const back = runId()
    const writer = await sink.open(back)
    const got: any[] = []
    const sub = replica.subscribe(back, (frame) => got.push(frame))
    await sub.ready
    const sentAt = Date.now()
    await writer.write({ t: 'text', v: 'hello from here' })
    await writer.end()
    await sub.done
    assert.equal(textOf(got), 'hello from here')
    assert.isBelow(Date.now() - sentAt, 3000)
  }).timeout(30_000)

  test('publishes ids only, after the commit, for every commit; never for a rollback', async ({
    assert,
  }) => {
    const channel = redisChannel()
    const messages = await listen(channel)
    const { sink } = await setupSink({ notifier: redisNotifier({ channel }) })
    const id = runId()
    const secret = 'secret-words-never-on-the-wire'
    const writer = await sink.open(id)
    await writer.write({ t: 'text', v: secret })
    await writer.flush()
    await writer.write({ t: 'event', event: { kind: 'title', title: secret } })
    await writer.end()

    // A settlement appended after the end (as parking does), its COMMIT held back 150 ms:
    // nothing is published before the commit.
    const rev = (await sink.head(id))!.rev + 1
    const client = sinkInternals(sink).store.client
    const transaction = client.transaction.bind(client)
    let checked = false
    client.transaction = (async (...args: any[]) => {
      const trx = await (transaction as any)(...args)
      const commit = trx.commit.bind(trx)
      trx.commit = async () => {
        await sleep(150)
        assert.notInclude(messages, `${id} ${rev}`, 'published before the commit')
        checked = true
        return commit()
      }
      return trx
    }) as any
    try {
      await sink.append(id, {
        frames: [{ t: 'event', event: { kind: 'title', title: secret } }],
        evenIfClosed: true,
      })
    } finally {
      client.transaction = transaction
    }
    assert.isTrue(checked)
    await until(() => messages.includes(`${id} ${rev}`), 3000, 'the settlement')
    // A rolled-back append publishes nothing (its rev is never used).
    await assert.rejects(() =>
      sink.append(id, {
        frames: [{ t: 'event', event: { kind: 'title', title: 'rolled back' } }],
        evenIfClosed: true,
        within: async () => {
          throw new Error('roll back')
        },
      })
    )
    const last = (await sink.head(id))!.rev
    await sink.close(id)
    await until(() => messages.includes(id), 3000, 'the removal')
    await sleep(100)

    for (const message of messages) {
      assert.match(message, /^[A-Za-z0-9_:.-]+( \d+)?$/)
      assert.notInclude(message, secret)
    }
    // Every commit published its rev once, in order: open, writes, end, the settlement.
    const revs = messages.filter((m) => m !== id).map((m) => Number(m.split(' ')[1]))
    assert.deepEqual(
      revs,
      Array.from({ length: last }, (_, i) => i + 1)
    )
    assert.equal(messages.at(-1), id)
  })

  test('a killed Redis connection reconnects with backoff and polls once: no frame lost', async ({
    assert,
  }) => {
    const channel = redisChannel()
    const errors: string[] = []
    const { sink } = await setupSink({
      pollIntervalMs: 60_000,
      onError: (error) => errors.push((error as Error).message),
      notifier: notifiers.redis({
        channel,
        client: redisClient(),
        reconnect: { min: 500, max: 1000 },
      }),
    })
    const notifier = redisNotifierOf(sink)
    const replica = await Replica.start({ pollIntervalMs: 60_000 }, { redis: { channel } })
    const id = runId()
    await replica.call({ op: 'open', runId: id })
    const reading = gather(sink.subscribe(id))
    await until(() => notifier.listening, 5000, 'subscription')
    await replica.call({ op: 'write', runId: id, frames: [{ t: 'text', v: 'before ' }] })
    await until(() => textOf(reading.frames) === 'before ', 3000, 'the first frame')

    let polls = 0
    const poll = sinkInternals(sink).tail.poll.bind(sinkInternals(sink).tail)
    sinkInternals(sink).tail.poll = () => {
      polls++
      return poll()
    }
    // Cut this replica's subscriber connection from the server side, as a failover would.
    const admin = redisClient()
    const ids = await clientIds(admin, `agent-stream-sub-${process.pid}`)
    assert.lengthOf(ids, 1)
    await admin.client('KILL', 'ID', ids[0])
    await until(() => !notifier.listening, 3000, 'the drop')

    // Written while the subscriber is away: its message is lost; the poll after the reconnect
    // (500 ms backoff) finds the frame, long before the minute's poll.
    await replica.call({ op: 'write', runId: id, frames: [{ t: 'text', v: 'during ' }] })
    assert.isFalse(notifier.listening, 'written while the subscriber was away')
    await until(() => textOf(reading.frames) === 'before during ', 5000, 'catch-up')
    assert.isTrue(notifier.listening)
    assert.isAtLeast(polls, 1)
    assert.isTrue(errors.some((message) => message.includes('Redis subscriber connection lost')))

    // Live again through Redis.
    const sentAt = Date.now()
    await replica.call({ op: 'write', runId: id, frames: [{ t: 'text', v: 'after' }] })
    await until(() => textOf(reading.frames).endsWith('after'), 3000, 'the frame after')
    assert.isBelow(Date.now() - sentAt, 3000)
    await replica.call({ op: 'end', runId: id })
    await reading.done
    assert.equal(textOf(reading.frames), 'before during after')
    // Every frame once: a later reader (the grown text row in one frame) reads the same.
    const again = await collect(sink.subscribe(id))
    assert.equal(textOf(again), textOf(reading.frames))
    assert.equal(again.at(-1)!.cursor, reading.frames.at(-1)!.cursor)
  }).timeout(30_000)

  test('Redis unreachable: wake-ups fall back to the poll with a warning, no frame lost', async ({
    assert,
  }) => {
    const channel = redisChannel()
    // Nothing listens on port 1.
    const dead = new Redis({ host: '127.0.0.1', port: 1, maxRetriesPerRequest: 1 })
    dead.on('error', () => {})
    const errors: string[] = []
    const onError = (error: unknown) => errors.push((error as Error).message)
    const { sink: reader, db } = await setupSink({
      pollIntervalMs: 100,
      onError,
      notifier: notifiers.redis({ channel, client: dead, reconnect: { min: 100, max: 200 } }),
    })
    const other = new LucidTokenStreamSink(db, {
      pollIntervalMs: 100,
      onError,
      notifier: notifiers.redis({ channel, client: dead, reconnect: { min: 100, max: 200 } }),
    })
    try {
      const id = runId()
      const writer = await other.open(id)
      const reading = collect(reader.subscribe(id))
      for (let i = 0; i < 10; i++) {
        await writer.write({ t: 'text', v: `w${i} ` })
        await sleep(20)
      }
      await writer.end()
      const frames = await reading
      assert.equal(textOf(frames), Array.from({ length: 10 }, (_, i) => `w${i} `).join(''))
      assert.isAbove(errors.length, 0)
      // Warned once per outage per publisher, not once per commit.
      assert.isAtMost(errors.filter((m) => m.includes('Redis is unreachable')).length, 2)
    } finally {
      await other.shutdown()
      dead.disconnect()
    }
  }).timeout(30_000)

  test('bad channels are refused without echoing them', async ({ assert }) => {
    for (const channel of ['', 'has space', 'x'.repeat(129), 'new\nline']) {
      try {
        notifiers.redis({ channel })
        assert.fail('accepted')
      } catch (error) {
        assert.match((error as Error).message, /Invalid Redis channel/)
        if (channel) assert.notInclude((error as Error).message, channel)
      }
    }
  })

  test('@adonisjs/redis is loaded lazily; without it, a clear error names the peer', async ({
    assert,
  }) => {
    const script = fileURLToPath(new URL('./fixtures/without_redis_peer.ts', import.meta.url))
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import=@poppinss/ts-exec', script],
      { env: process.env }
    )
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!)
    // The notifiers module loaded without the peer; `client` needs nothing of it.
    assert.isTrue(result.withClient)
    assert.match(result.withConnection, /optional peer "@adonisjs\/redis"/)
  }).timeout(20_000)
})

test.group('Redis notifier in an AdonisJS app', () => {
  const url = new URL(REDIS_URL)
  const redis = {
    connection: 'main',
    connections: { main: { host: url.hostname, port: Number(url.port || 6379) } },
  }

  test('a connection of config/redis.ts, through the container: commits publish on it', async ({
    assert,
  }) => {
    const channel = redisChannel()
    const messages = await listen(channel)
    const app = await setupApp(
      { notifier: notifiers.redis({ connection: 'main', channel }) },
      { redis }
    )
    await resetTables(await app.container.make('lucid.db'))
    const agentStream = await app.container.make('agentStream')
    const id = runId()
    const writer = await agentStream.sink.open(id)
    await writer.write({ t: 'text', v: 'through @adonisjs/redis' })
    await writer.end()
    // One message per commit (the text and the end may share one).
    const last = (await agentStream.sink.head(id))!.rev
    await until(() => messages.length >= last, 3000, 'the messages')
    assert.deepEqual(
      messages,
      Array.from({ length: last }, (_, i) => `${id} ${i + 1}`)
    )
    assert.equal(textOf(await collect(agentStream.sink.subscribe(id))), 'through @adonisjs/redis')

    // A sink made by hand in the app (no config provider, so no `prepare`): the connection is
    // found through @adonisjs/redis's service at first use.
    const other = redisChannel()
    const received = await listen(other)
    const sink = new LucidTokenStreamSink(await app.container.make('lucid.db'), {
      notifier: notifiers.redis({ channel: other }),
    })
    const second = runId()
    await sink.open(second)
    await until(() => received.includes(`${second} 1`), 3000, 'the service path')
    await sink.shutdown()
  })

  test('misconfigured: the app fails at startup naming what is missing', async ({ assert }) => {
    const withoutProvider = await setupApp({ notifier: notifiers.redis() })
    await assert.rejects(
      () => withoutProvider.container.make('agentStream'),
      /resolves its connection through @adonisjs\/redis/
    )
    const unknown = await setupApp({ notifier: notifiers.redis({ connection: 'nope' }) }, { redis })
    await assert.rejects(
      () => unknown.container.make('agentStream'),
      /no Redis connection "nope" in config\/redis.ts/
    )
  })
})

import { Writable } from 'node:stream'
import { test } from '@japa/runner'
import { defineConfig as defineLoggerConfig } from '@adonisjs/core/logger'
import { notifiers } from '../src/follow/notifiers/index.js'
import { setupApp } from './helpers/app.js'
import { resetTables } from './helpers/db.js'
import { redisChannel, redisNotifierOf, until } from './helpers/redis.js'
import { startPrivateRedis, canStartRedis } from './helpers/redis_server.js'
import { runId, setupSink, sleep, textOf } from './helpers/sink.js'
import { Redis } from 'ioredis'

/** The lines an AdonisJS app logs, parsed (pino's JSON lines). */
function logLines() {
  const lines: { level: number; msg: string; err?: { message?: string } }[] = []
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line))
      done()
    },
  })
  return { lines, destination }
}

test.group('Redis outage in an AdonisJS app', () => {
  test('one warning at the start, one info at the recovery, whatever the outage length', async ({
    assert,
  }) => {
    const redis = await startPrivateRedis()
    const { lines, destination } = logLines()
    const channel = redisChannel()
    const app = await setupApp(
      {
        notifier: notifiers.redis({
          connection: 'main',
          channel,
          reconnect: { min: 50, max: 400 },
        }),
      },
      {
        redis: {
          connection: 'main',
          connections: { main: { host: '127.0.0.1', port: redis.port } },
        },
        extend: {
          providers: [],
          config: {
            logger: defineLoggerConfig({
              default: 'app',
              loggers: { app: { enabled: true, level: 'info', destination } as any },
            }),
          },
        },
      }
    )
    await resetTables(await app.container.make('lucid.db'))
    const agentStream = await app.container.make('agentStream')
    const sink = agentStream.sink
    const id = runId()
    const writer = await sink.open(id)
    const reading = (async () => {
      const frames: any[] = []
      for await (const frame of sink.subscribe(id)) frames.push(frame)
      return frames
    })()
    await until(() => redisNotifierOf(sink as any).listening, 5000, 'subscription')
    await writer.write({ t: 'text', v: 'before ' })
    await writer.flush()
    const before = lines.length
    await redis.stop()
    for (let i = 0; i < 30; i++) {
      await writer.write({ t: 'text', v: `${i} ` })
      await writer.flush()
      await sleep(100)
    }
    await redis.start()
    await until(() => redisNotifierOf(sink as any).listening, 10_000, 'resubscribed')
    await writer.write({ t: 'text', v: 'after' })
    await writer.end()
    const frames = await reading
    // Nothing lost: the reader caught up by the poll meanwhile.
    assert.equal(
      frames.map((f: any) => f.v).join(''),
      `before ${Array.from({ length: 30 }, (_, i) => `${i} `).join('')}after`
    )
    // The publisher's connection may come back a little after the subscriber's (its own backoff).
    await until(() => lines.slice(before).some((line) => line.level === 30), 10_000, 'the info')
    await sleep(300)
    // Every line the app logged from the outage's start on: the package's warning when it
    // began and its info line when Redis answered again, nothing else (no line per failed
    // reconnect, neither the package's nor @adonisjs/redis's).
    const during = lines.slice(before).map((line) => ({
      level: line.level,
      text: `${line.msg} ${line.err?.message ?? ''}`.trim(),
    }))
    assert.deepEqual(
      during.map((line) => line.level),
      [40, 30],
      during.map((line) => line.text).join('\n')
    )
    assert.match(during[0].text, /Redis/)
    assert.match(during[1].text, /Redis answers again/)
  })
    .skip(!canStartRedis(), 'redis-server not installed')
    .timeout(60_000)

  test('with a client of its own: per outage one onError and one onInfo, two outages two each', async ({
    assert,
  }) => {
    const redis = await startPrivateRedis()
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    client.on('error', () => {})
    const errors: unknown[] = []
    const infos: string[] = []
    const { sink } = await setupSink({
      pollIntervalMs: 100,
      onError: (error) => errors.push(error),
      onInfo: (message) => infos.push(message),
      notifier: notifiers.redis({
        channel: redisChannel(),
        client,
        reconnect: { min: 50, max: 400 },
      }),
    })
    try {
      const id = runId()
      const writer = await sink.open(id)
      const reading = collectAll(sink.subscribe(id))
      await until(() => redisNotifierOf(sink).listening, 5000, 'subscription')
      let expected = ''
      for (let outage = 1; outage <= 2; outage++) {
        await redis.stop()
        for (let i = 0; i < 20; i++) {
          const text = `${outage}.${i} `
          expected += text
          await writer.write({ t: 'text', v: text })
          await writer.flush()
          await sleep(100)
        }
        await redis.start()
        await until(
          () => redisNotifierOf(sink).listening && infos.length === outage,
          10_000,
          'recovery'
        )
        assert.lengthOf(errors, outage, errors.map((e) => String(e)).join('\n'))
      }
      await writer.end()
      assert.equal(textOf(await reading), expected)
      assert.lengthOf(infos, 2)
      assert.lengthOf(errors, 2)
    } finally {
      client.disconnect()
    }
  })
    .skip(!canStartRedis(), 'redis-server not installed')
    .timeout(60_000)
})

async function collectAll(iterable: AsyncIterable<any>) {
  const frames: any[] = []
  for await (const frame of iterable) frames.push(frame)
  return frames
}

import { getActiveTest } from '@japa/runner'
import { Redis, type RedisOptions } from 'ioredis'
import { notifiers, type RedisNotifierFactoryOptions } from '../../src/follow/notifiers/index.js'
import { RedisNotifier } from '../../src/follow/notifiers/redis.js'
import { sinkInternals, type LucidTokenStreamSink } from '../../src/sink/lucid_sink.js'

/** The Redis the suite uses (shared: every key and channel under {@link REDIS_PREFIX}). */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
/** Prefix of every channel the suite uses on the shared Redis (`REDIS_PREFIX`). */
export const REDIS_PREFIX = process.env.REDIS_PREFIX ?? 'agent_stream_test:'

let counter = 0
/** A channel unique to this process and test. */
export function redisChannel() {
  return `${REDIS_PREFIX}agent_stream:${process.pid}:${Date.now().toString(36)}:${++counter}`
}

/** An ioredis client on the suite's Redis, closed when the running test ends. */
export function redisClient(options: RedisOptions = {}) {
  const client = new Redis(REDIS_URL, options)
  client.on('error', () => {})
  getActiveTest()?.cleanup(() => client.disconnect())
  return client
}

/** What a replica process is told to build its Redis notifier from (JSON in `REDIS_NOTIFIER`). */
export type RedisNotifierSpec = Omit<RedisNotifierFactoryOptions, 'client' | 'connection'>

/** `notifiers.redis()` on a fresh client of the suite's Redis. */
export function redisNotifier(spec: RedisNotifierSpec) {
  return notifiers.redis({ ...spec, client: redisClient() })
}

/** The Redis notifier a sink's tail runs. */
export function redisNotifierOf(sink: LucidTokenStreamSink) {
  const notifier = sinkInternals(sink).tail.notifiers.find((n) => n instanceof RedisNotifier)
  if (!notifier) throw new Error('the sink has no Redis notifier')
  return notifier as RedisNotifier
}

/** Resolves once `check()` holds (polled every 10 ms); rejects after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs = 5000, what = 'condition') {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** The ids of the connections named `name` on the Redis server (`CLIENT LIST`). */
export async function clientIds(admin: Redis, name: string): Promise<string[]> {
  const list = (await admin.client('LIST')) as string
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${name} `))
    .map((line) => /(?:^|\s)id=(\d+)/.exec(line)![1])
}

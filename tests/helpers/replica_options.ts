import { notifiers } from '../../src/follow/notifiers/index.js'

/**
 * The sink options a replica process is started with: `SINK_OPTIONS` (JSON), and, when
 * `REDIS_NOTIFIER` (JSON: channel, poll, backoff) is set, a Redis notifier on `REDIS_URL`, so the
 * replica wakes and publishes through Redis. Shared by the tests' second replica and the bench's.
 */
export async function sinkOptionsFromEnv() {
  const options = JSON.parse(process.env.SINK_OPTIONS ?? '{}')
  if (process.env.REDIS_NOTIFIER) {
    const { Redis } = await import('ioredis')
    const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
    client.on('error', () => {})
    options.notifier = notifiers.redis({ ...JSON.parse(process.env.REDIS_NOTIFIER), client })
  }
  return options
}

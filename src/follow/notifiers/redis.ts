import { DEFAULTS } from '../../defaults.js'
import { parseWakeUp } from '../../store/wake_ups.js'
import { recordWakeUpHeard } from '../../telemetry/metrics/index.js'
import { wakeTail, type Notifier, type NotifierHandlers } from './notifier.js'
import type { RedisClient, RedisSubscriber } from './redis_client.js'
import { REDIS_UNREACHABLE, RedisOutage } from './redis_outage.js'

/** A Redis channel name this package accepts: 1 to 128 letters, digits or `_:.-`. */
export const REDIS_CHANNEL = /^[A-Za-z0-9_:.-]{1,128}$/

export interface RedisNotifierOptions {
  /** Channel the writers publish on (see {@link REDIS_CHANNEL}). */
  channel: string
  /** The client whose `duplicate()` becomes the dedicated subscriber connection. */
  client: () => Promise<RedisClient>
  /** Backoff between reconnect attempts, in milliseconds: doubles from `min` up to `max`. */
  reconnect?: { min: number; max: number }
  /** Told about a configuration fault (the peer missing, an unknown connection): no retry helps. */
  onError?: (error: unknown) => void
  /**
   * Told about drops and failed reconnects: one warning per outage, one info at its end
   * (shared with the notifier's publisher). Default: one of its own on `onError`.
   */
  outage?: RedisOutage
}

/**
 * Cross-replica wake-ups over Redis pub/sub on one dedicated subscriber connection per replica
 * (an ioredis `duplicate()` of the client, named `agent-stream-sub-<pid>`). Writers publish
 * `<runId> <rev>` once their commit succeeded (`RedisPublisher`), ids only: the tail reads the
 * committed rows itself. A dropped connection reconnects with backoff (ioredis's own, with this
 * backoff); after every (re)connect it SUBSCRIBEs, and once Redis confirmed, the tail polls once,
 * since messages published while it was away are lost.
 */
export class RedisNotifier implements Notifier {
  /** The subscriber connection outlives the last reader a little: readers come and go. */
  readonly lingerMs = DEFAULTS.notifyLingerMs
  #subscriber: RedisSubscriber | null = null
  #handlers: NotifierHandlers | null = null
  #subscribed = false
  /** Bumped by every start and stop: an open that finishes after a stop is dropped. */
  #generation = 0
  #outage: RedisOutage

  constructor(readonly options: RedisNotifierOptions) {
    if (!REDIS_CHANNEL.test(options.channel)) {
      throw new Error('Invalid Redis channel: use 1 to 128 letters, digits or "_:.-"')
    }
    this.#outage = options.outage ?? new RedisOutage(options.onError)
  }

  /** Whether the subscription is confirmed on a live connection. */
  get listening() {
    return this.#subscribed
  }

  start(handlers: NotifierHandlers) {
    this.#handlers = handlers
    void this.#open(++this.#generation)
  }

  async stop() {
    this.#generation++
    const subscriber = this.#subscriber
    this.#subscriber = null
    this.#subscribed = false
    this.#outage.forget('subscriber')
    if (subscriber) {
      subscriber.removeAllListeners()
      subscriber.on('error', () => {})
      subscriber.disconnect()
    }
  }

  async #open(generation: number) {
    let client: RedisClient
    try {
      client = await this.options.client()
    } catch (error) {
      // A configuration fault (peer missing, unknown connection): retrying cannot fix it. The
      // heads poll stands in.
      this.options.onError?.(error)
      return
    }
    if (generation !== this.#generation) return
    const { min, max } = this.options.reconnect ?? DEFAULTS.notifyReconnect
    const subscriber = client.duplicate({
      connectionName: `agent-stream-sub-${process.pid}`,
      // Subscribed by hand on each `ready`, so the poll-once follows the confirmed SUBSCRIBE.
      autoResubscribe: false,
      lazyConnect: false,
      retryStrategy: (times: number) => Math.min(min * 2 ** Math.max(0, times - 1), max),
    })
    this.#subscriber = subscriber
    subscriber.on('message', (channel, message) => {
      if (channel === this.options.channel) this.#message(message)
    })
    subscriber.on('ready', () => void this.#subscribe(subscriber))
    subscriber.on('close', () => {
      if (this.#subscriber !== subscriber || !this.#subscribed) return
      this.#subscribed = false
      this.#outage.failed(
        'subscriber',
        'agent-stream: Redis subscriber connection lost; reconnecting, polling meanwhile'
      )
    })
    // ioredis reports every failed reconnect: the outage is told once.
    subscriber.on('error', (error) => this.#outage.failed('subscriber', REDIS_UNREACHABLE, error))
  }

  async #subscribe(subscriber: RedisSubscriber) {
    try {
      await subscriber.subscribe(this.options.channel)
    } catch (error) {
      // The connection dropped again (it reconnects and comes back here), or Redis refused.
      this.#outage.failed('subscriber', REDIS_UNREACHABLE, error)
      return
    }
    if (this.#subscriber !== subscriber) return
    this.#subscribed = true
    this.#outage.answered('subscriber')
    this.#handlers?.resync()
  }

  /** A wake-up (`parseWakeUp`: a hint); anything else on the channel is ignored. */
  #message(message: string) {
    const wakeUp = parseWakeUp(message)
    if (wakeUp) recordWakeUpHeard('redis', ...wakeUp)
    if (wakeUp) wakeTail(this.#handlers, wakeUp)
  }
}

/** The warning a Redis outage starts with, when nothing more precise is known. */
export const REDIS_UNREACHABLE =
  'agent-stream: Redis is unreachable; wake-ups fall back to the poll until it is back'

/** Which connection of a notifier saw Redis fail or answer. */
export type RedisSide = 'publisher' | 'subscriber'

/**
 * One Redis outage as the log tells it, for a notifier's publisher and subscriber together: one
 * warning when it starts (whichever notices first), nothing while it lasts (ioredis reports
 * every failed reconnect, a publisher every failed publish), one info line once every side that
 * failed answers again (a publisher's client ready or a publish through, a confirmed SUBSCRIBE).
 * A CLIENT KILL of the subscriber is an outage of one connection: the same two lines.
 */
export class RedisOutage {
  /** The sides failed and not answered since. */
  #failed = new Set<RedisSide>()
  /** Whether the current outage was warned about (its end not told yet). */
  #warned = false

  constructor(
    /** Told the warning (an `Error`, its cause the first failure). */
    readonly onError?: (error: unknown) => void,
    /** Told the recovery (one line). */
    readonly onInfo?: (message: string) => void
  ) {}

  /** Whether an outage was warned about and has not ended. */
  get down() {
    return this.#warned
  }

  /** Redis failed for `side`: the first failure of an outage is warned about as `message`. */
  failed(side: RedisSide, message: string, cause?: unknown) {
    this.#failed.add(side)
    if (this.#warned) return
    this.#warned = true
    this.onError?.(cause === undefined ? new Error(message) : new Error(message, { cause }))
  }

  /** Redis answered `side`: once no side is failed, an outage warned about is over. */
  answered(side: RedisSide) {
    this.#failed.delete(side)
    if (!this.#warned || this.#failed.size > 0) return
    this.#warned = false
    this.onInfo?.('agent-stream: Redis answers again; wake-ups go through it again')
  }

  /** `side` stopped (no reader left): it no longer keeps an outage open, nor ends one aloud. */
  forget(side: RedisSide) {
    this.#failed.delete(side)
    if (this.#failed.size === 0) this.#warned = false
  }
}

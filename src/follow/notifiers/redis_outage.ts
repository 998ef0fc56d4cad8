/** The warning a Redis outage starts with, when nothing more precise is known. */
export const REDIS_UNREACHABLE =
  'agent-stream: Redis is unreachable; wake-ups fall back to the poll until it is back'

/**
 * One Redis outage as the log tells it, for a notifier's publisher and subscriber together: one
 * warning when it starts (whichever notices first), nothing while it lasts (ioredis reports
 * every failed reconnect, a publisher every failed publish), one info line once Redis answers
 * again. A CLIENT KILL of the subscriber is an outage of one connection: the same two lines.
 */
export class RedisOutage {
  #down = false

  constructor(
    /** Told the warning (an `Error`, its cause the first failure). */
    readonly onError?: (error: unknown) => void,
    /** Told the recovery (one line). */
    readonly onInfo?: (message: string) => void
  ) {}

  /** Whether an outage was warned about and Redis has not answered since. */
  get down() {
    return this.#down
  }

  /** Redis failed: the first failure of an outage is warned about as `message`, the rest not. */
  failed(message: string, cause?: unknown) {
    if (this.#down) return
    this.#down = true
    this.onError?.(cause === undefined ? new Error(message) : new Error(message, { cause }))
  }

  /** Redis answered (a publish, a confirmed SUBSCRIBE): an outage warned about is over. */
  answered() {
    if (!this.#down) return
    this.#down = false
    this.onInfo?.('agent-stream: Redis answers again; wake-ups go through it again')
  }
}

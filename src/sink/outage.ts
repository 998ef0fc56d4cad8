import { DEFAULTS } from '../defaults.js'
import { isTransientError } from '../store/transient.js'

/** Backoff between retries while the database is unreachable, in milliseconds. */
export interface RetryBackoff {
  /** First delay; it doubles after each failure. */
  min: number
  /** Longest delay. */
  max: number
}

/**
 * The clock of one party's database outage (a writer's, a reader's): when the first transient
 * failure came, the backoff between retries, and a timer that fires `exceeded` once the database
 * has been unreachable for `boundMs`. Any success ends the outage and resets both.
 */
export class Outage {
  /** When the outage began (epoch milliseconds), or `null` while the database answers. */
  since: number | null = null
  #delay: number
  #bound: NodeJS.Timeout | null = null
  #wakers = new Set<() => void>()
  #stopped = false

  constructor(
    /** How long the database may stay unreachable; `Infinity` for no bound. */
    readonly boundMs: number,
    readonly hooks: { began?: () => void; exceeded?: () => void } = {},
    readonly backoff: RetryBackoff = DEFAULTS.outageRetry
  ) {
    this.#delay = backoff.min
  }

  /** A transient failure: the first one starts the outage (and the bound's timer). */
  failed() {
    if (this.since !== null || this.#stopped) return
    this.since = Date.now()
    if (Number.isFinite(this.boundMs)) {
      this.#bound = setTimeout(() => this.hooks.exceeded?.(), this.boundMs)
      this.#bound.unref()
    }
    this.hooks.began?.()
  }

  /** A round trip succeeded: the outage is over, a retry waiting in `pause()` goes at once. */
  recovered() {
    this.#delay = this.backoff.min
    if (this.since === null) return
    this.since = null
    if (this.#bound) clearTimeout(this.#bound)
    this.#bound = null
    this.#wake()
  }

  /** The next backoff delay (milliseconds); each call doubles the following one. */
  nextDelay() {
    const delay = this.#delay
    this.#delay = Math.min(delay * 2, this.backoff.max)
    return delay
  }

  /**
   * Wait the next backoff delay; ends early on `recovered()` or `stop()`. With `keepAlive: false`
   * the timer does not keep the process alive.
   */
  pause({ keepAlive = true } = {}): Promise<void> {
    if (this.#stopped) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.#wakers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, this.nextDelay())
      if (!keepAlive) timer.unref()
      this.#wakers.add(done)
    })
  }

  /** No more retries: the bound's timer is cleared and a waiting `pause()` returns. */
  stop() {
    this.#stopped = true
    if (this.#bound) clearTimeout(this.#bound)
    this.#bound = null
    this.#wake()
  }

  get stopped() {
    return this.#stopped
  }

  #wake() {
    for (const wake of [...this.#wakers]) wake()
  }
}

/**
 * Run `work`; while it fails with a transient database error (see `isTransientError`), retry it
 * with backoff, for at most `boundMs` after the first failure. A read is safe to retry; a write
 * only when it is idempotent (the writer's commits carry a token for that).
 *
 * @throws the last error once `boundMs` passed, at once for a non-transient error, and when
 *   `signal` aborts (a reader that went away) the error of the attempt before
 */
export async function retryTransient<T>(
  work: () => Promise<T>,
  options: { boundMs: number; signal?: AbortSignal; backoff?: RetryBackoff }
): Promise<T> {
  const outage = new Outage(Number.POSITIVE_INFINITY, {}, options.backoff)
  const onAbort = () => outage.stop()
  options.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    while (true) {
      try {
        return await work()
      } catch (error) {
        if (!isTransientError(error) || outage.stopped) throw error
        outage.failed()
        if (Date.now() - outage.since! >= options.boundMs) throw error
        await outage.pause()
        if (outage.stopped) throw error
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
  }
}

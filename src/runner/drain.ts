import type { RunOutcome } from './contract.js'

/** What a segment still running when the drain time is up ends with: retryable, at once. */
export const SHUTDOWN_OUTCOME: Readonly<RunOutcome> = Object.freeze({
  status: 'failed',
  code: 'replica_shutdown',
})

/**
 * A replica's graceful shutdown as the run driver sees it, in two steps: `begin()` (it starts
 * and resumes nothing more), then `expire()` once the drain time is up (the segments still
 * running stop: each one's {@link Drain.watch} resolves to {@link SHUTDOWN_OUTCOME}).
 */
export class Drain {
  #draining = false
  #expired = false
  /** The segments running now, each told when the drain time is up. */
  #segments = new Set<() => void>()

  /** Whether the replica drains: no new run, no resume. */
  get draining() {
    return this.#draining
  }

  /** Whether the drain time is up: running segments are stopped. */
  get expired() {
    return this.#expired
  }

  begin() {
    this.#draining = true
  }

  expire() {
    this.#draining = true
    this.#expired = true
    for (const stop of this.#segments) stop()
    this.#segments.clear()
  }

  /**
   * Watch one segment: `stopped` resolves to {@link SHUTDOWN_OUTCOME} once the drain time is up;
   * `done()` when the segment ended (nothing is kept for it after).
   */
  watch(): { stopped: Promise<RunOutcome>; done: () => void } {
    let stop!: () => void
    const stopped = new Promise<RunOutcome>((resolve) => (stop = () => resolve(SHUTDOWN_OUTCOME)))
    if (this.#expired) stop()
    else this.#segments.add(stop)
    return { stopped, done: () => this.#segments.delete(stop) }
  }
}

import type { RunOutcome } from './contract.js'

/** What a segment still running when the drain time is up ends with: retryable, at once. */
export const SHUTDOWN_OUTCOME: Readonly<RunOutcome> = Object.freeze({
  status: 'failed',
  code: 'replica_shutdown',
})

/**
 * A replica's graceful shutdown as the run driver sees it, in two steps: `begin()` (it starts
 * and resumes nothing more), then `expire()` once the drain time is up (the segments still
 * running stop: {@link stopped} resolves to {@link SHUTDOWN_OUTCOME}).
 */
export class Drain {
  #draining = false
  #expired = false
  #expire!: (outcome: RunOutcome) => void
  /** Resolves once the drain time is up, to the outcome a segment still running ends with. */
  readonly stopped: Promise<RunOutcome> = new Promise((resolve) => (this.#expire = resolve))

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
    this.#expire(SHUTDOWN_OUTCOME)
  }
}

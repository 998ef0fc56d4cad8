import type { StopMode } from '../store/stop_requests.js'
import type { RunOutcome } from './contract.js'

/** What a segment still running `stopGraceMs` after its stop ends with: cancelled, at once. */
export const STOPPED_OUTCOME: Readonly<RunOutcome> = Object.freeze({ status: 'cancelled' })

/**
 * One running segment's stop, as the run driver sees it: `stop(mode)` (a stop heard from any
 * replica, or asked on this one) aborts the agent's `signal` at once; a runner that has not
 * returned `graceMs` later no longer counts (`halted` resolves to {@link STOPPED_OUTCOME}, and
 * what it still writes is refused). The first stop's mode is the one kept.
 */
export class SegmentStop {
  #mode: StopMode | null = null
  #timer: NodeJS.Timeout | null = null
  #halt!: (outcome: RunOutcome) => void
  /** Resolves `graceMs` after the stop, for a runner that did not return by then. */
  readonly halted = new Promise<RunOutcome>((resolve) => (this.#halt = resolve))

  constructor(
    readonly controller: AbortController,
    readonly graceMs: number
  ) {}

  /** What the stop asked, or `null` while nobody stopped the segment. */
  get mode() {
    return this.#mode
  }

  stop(mode: StopMode) {
    if (this.#mode !== null) return
    this.#mode = mode
    this.controller.abort()
    this.#timer = setTimeout(() => this.#halt(STOPPED_OUTCOME), this.graceMs)
    this.#timer.unref()
  }

  /** The segment ended: no timer is left behind. */
  done() {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }
}

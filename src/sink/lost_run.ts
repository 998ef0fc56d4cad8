import { StoreUnavailableError } from '../errors.js'
import type { AppendContext } from './append.js'
import { Outage } from './outage.js'
import type { RetriedCommits } from './retried_commit.js'

/** Why a writer lost its run: an outage past its bound, its buffer full, a refused commit. */
export type LossReason = 'bound' | 'buffer' | 'refused'

/**
 * A writer's run lost to the database (see `LucidSinkWriter`): the error every call throws from
 * then on, the driver told (`onLost`: it stops the agent), and the run's failure (an `error`
 * frame `run_failed` and the end) written once the database answers, retried until it is or the
 * sink shuts down; when it cannot be stored, this replica's readers are told from memory.
 */
export class LostRun {
  /** The error every call throws once the run is lost; `null` until then. */
  error: StoreUnavailableError | null = null
  #onLost: (() => void) | undefined
  /** The failure being written, and its retries (stopped by `stop()`). */
  #recording: Promise<void> | null = null
  #retry: Outage | null = null

  constructor(
    readonly runId: string,
    readonly context: AppendContext,
    readonly commits: RetriedCommits,
    readonly onError?: (error: unknown) => void
  ) {}

  /** Called once when the run is lost. */
  set onLost(callback: () => void) {
    this.#onLost = callback
  }

  /**
   * The run is lost for `reason`: `false` when it was already. A refusal is reported at once
   * (`onError`) and the segment is dropped: no other replica takes over a segment whose writes
   * the database refuses.
   */
  lose(reason: LossReason, cause?: unknown): boolean {
    if (this.error) return false
    this.error = new StoreUnavailableError(reason, cause)
    if (reason === 'refused') {
      this.onError?.(this.error)
      void this.context.store.dropSegment(this.runId).catch(() => {})
    }
    return true
  }

  /** Tell the driver, then write the failure (once the writer let go of what it held). */
  record() {
    this.#onLost?.()
    this.#retry = new Outage(Number.POSITIVE_INFINITY)
    // A refusal was told already; a failure the database refuses after an outage is told here.
    const refused = this.error?.reason === 'refused'
    const refusedToo = (error: unknown) =>
      !refused && this.onError?.(new StoreUnavailableError('refused', error))
    this.#recording = this.commits.fail(this.#retry, refusedToo).then((ended) => {
      // Not stored: this replica's readers are told from memory.
      if (!ended) this.context.tail.lost(this.runId)
    })
  }

  /** Resolves once the failure was written or given up; `null` when none is being written. */
  get recording() {
    return this.#recording
  }

  /** Stop retrying the failure (the sink shuts down). */
  stop() {
    this.#retry?.stop()
  }
}

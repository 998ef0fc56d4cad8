import { DecisionConflictError } from '../errors.js'
import { DEFAULTS } from '../defaults.js'
import type { ParkingDecisions } from './decisions.js'
import type { ParkingStore } from './parking_store.js'
import type { ReadyNotices } from './ready.js'

/** What {@link ParkingSweeper} sweeps with. */
export interface SweeperDeps {
  /** Lapsed items (`reads`), orphaned suspensions (`parks`), claim candidates (`claims`). */
  store: Pick<ParkingStore, 'reads' | 'parks' | 'claims'>
  /** A lapsed item is settled as expired by the decisions' own rule. */
  decisions: ParkingDecisions
  /** Told of every suspension that may be claimable. */
  ready: ReadyNotices
  /** A sweep's failures (it tries again at the next tick). */
  onError?: (error: unknown) => void
  /**
   * Read the database's clock (the one every expiry is in) and warn when this replica's disagrees:
   * at start and at every sweep (`ClockWatch.check`). A failed read is the sweep's to retry.
   */
  clock?: () => Promise<unknown>
}

/**
 * What parking does on a timer, on every replica: settle lapsed items as expired, abandon
 * suspensions whose stream is gone, and emit a ready notice for every suspension that may be
 * claimable (decided while no replica resumed it, or claimed by one whose claim lapsed), so that
 * the run driver listening claims and resumes it. Every time it compares (an item's expiry, a
 * claim's lease) is the database's: each sweep reads that clock first (and warns of a skew).
 */
export class ParkingSweeper {
  readonly #deps: SweeperDeps

  constructor(deps: SweeperDeps) {
    this.#deps = deps
  }

  /** Settle lapsed items as expired (and resume what that unblocks). Returns how many. */
  async expireLapsed(limit: number = DEFAULTS.sweepBatch) {
    let expired = 0
    for (const item of await this.#deps.store.reads.lapsed(limit)) {
      try {
        await this.#deps.decisions.expireItem(item)
        expired++
      } catch (error) {
        if (!(error instanceof DecisionConflictError)) this.#deps.onError?.(error)
      }
    }
    return expired
  }

  /**
   * Emit a ready notice for every suspension that may be claimable (decided while no replica
   * resumed it, or claimed by one whose claim lapsed). Returns how many a listener claimed.
   * @throws what a listener throws
   */
  async resumeReady(limit: number = DEFAULTS.sweepBatch) {
    let resumed = 0
    for (const { runId, park } of await this.#deps.store.claims.claimCandidates(limit)) {
      if (await this.#deps.ready.emit({ runId, park })) resumed++
    }
    return resumed
  }

  /**
   * Start sweeping: every `intervalMs`, expire lapsed items, abandon orphaned suspensions and
   * resume what is ready (one sweep at a time). Call it on `ready`, never in warmup. Returns a
   * stop function.
   */
  start(intervalMs: number = DEFAULTS.sweepIntervalMs) {
    let running = false
    // At start: a replica whose clock is off says so at once.
    void this.#deps.clock?.().catch(() => {})
    const timer = setInterval(() => {
      if (running) return
      running = true
      void (async () => {
        try {
          await this.#deps.clock?.().catch(() => {})
          await this.expireLapsed()
          await this.#deps.store.parks.abandonOrphans()
          await this.resumeReady()
        } catch (error) {
          this.#deps.onError?.(error)
        } finally {
          running = false
        }
      })()
    }, intervalMs)
    timer.unref()
    return () => clearInterval(timer)
  }
}

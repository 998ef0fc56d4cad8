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
  /**
   * Streams whose writer's lease lapsed mid-segment (`find`), each continued by this replica or
   * failed (`settle`: the sink's `settleLapsed`), whether or not anyone reads them.
   */
  lapsed?: {
    find: (limit: number) => Promise<string[]>
    settle: (runId: string) => Promise<void>
    /**
     * A lease that lapsed while this replica's sweeps failed or stalled says nothing of its
     * writer (it could not renew either): lapsed leases are acted on only once sweeps went well
     * for this long (the lease length).
     */
    graceMs: number
  }
  /** A sweep's failures (it tries again at the next tick). */
  onError?: (error: unknown) => void
}

/**
 * What parking does on a timer, on every replica: settle lapsed items as expired, abandon
 * suspensions whose stream is gone, and emit a ready notice for every suspension that may be
 * claimable (decided while no replica resumed it, or claimed by one whose claim lapsed), so that
 * the run driver listening claims and resumes it.
 */
export class ParkingSweeper {
  readonly #deps: SweeperDeps
  /** When a sweep last failed or stalled (`performance.now()`), if ever. */
  #troubleAt = Number.NEGATIVE_INFINITY

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
   * Settle the streams whose writer's lease lapsed mid-segment: each is continued here (the
   * runner can be continued) or failed (see `SweeperDeps.lapsed`). Returns how many were seen;
   * none while a recent sweep failed or stalled.
   */
  async settleLapsed(limit: number = DEFAULTS.sweepBatch) {
    const lapsed = this.#deps.lapsed
    if (!lapsed || performance.now() - this.#troubleAt < lapsed.graceMs) return 0
    const runIds = await lapsed.find(limit)
    for (const runId of runIds) {
      await lapsed.settle(runId).catch((error) => this.#deps.onError?.(error))
    }
    return runIds.length
  }

  /**
   * Start sweeping: every `intervalMs`, expire lapsed items, abandon orphaned suspensions,
   * resume what is ready and settle lapsed segments (one sweep at a time). Call it on `ready`,
   * never in warmup. Returns a stop function.
   */
  start(intervalMs: number = DEFAULTS.sweepIntervalMs) {
    let running = false
    const timer = setInterval(() => {
      if (running) return
      running = true
      void (async () => {
        const began = performance.now()
        try {
          await this.expireLapsed()
          await this.#deps.store.parks.abandonOrphans()
          await this.resumeReady()
          await this.settleLapsed()
        } catch (error) {
          this.#troubleAt = performance.now()
          this.#deps.onError?.(error)
        } finally {
          // A sweep that took longer than a lease renewal's interval: the database (or this
          // process) stalled, and writers may not have renewed meanwhile.
          const graceMs = this.#deps.lapsed?.graceMs ?? Number.POSITIVE_INFINITY
          if (performance.now() - began > graceMs / 3) this.#troubleAt = performance.now()
          running = false
        }
      })()
    }, intervalMs)
    timer.unref()
    return () => clearInterval(timer)
  }
}

import { DecisionConflictError } from '../errors.js'
import { DEFAULTS } from '../defaults.js'
import type { ParkingDecisions } from './decisions.js'
import type { ParkingStore } from './parking_store.js'
import type { ReadyNotices } from './ready.js'
import { ReadHealth } from '../follow/read_health.js'
import { isTransientError } from '../store/transient.js'

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
  /**
   * Start the first queued message of every idle thread with messages waiting (the busy-thread
   * queue, `RunQueue.startIdle`: its run ended on a replica that died before starting it).
   */
  queued?: (limit: number) => Promise<number>
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
  /** Whether this replica's sweeps could have seen leases renewed: the tail's rule, one place. */
  readonly #health: ReadHealth

  constructor(deps: SweeperDeps) {
    this.#deps = deps
    this.#health = ReadHealth.forLease(deps.lapsed?.graceMs ?? Number.POSITIVE_INFINITY)
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
    if (!lapsed || !this.#health.healthyFor(lapsed.graceMs)) return 0
    const runIds = await lapsed.find(limit)
    for (const runId of runIds) {
      await lapsed.settle(runId).catch((error) => this.#deps.onError?.(error))
    }
    return runIds.length
  }

  /**
   * One sweep, each step on its own: a step that fails is reported and the next runs (a lock
   * conflict in one does not hold back the takeover of a dead writer's segment), except when the
   * database is away (a transient error): the rest waits for the next sweep, and lapsed leases
   * are held for a lease length (this replica could not have seen them renewed).
   */
  async #sweep() {
    await this.#deps.clock?.().catch(() => {})
    const steps = [
      () => this.expireLapsed(),
      () => this.#deps.store.parks.abandonOrphans(),
      () => this.resumeReady(),
      () => this.settleLapsed(),
      () => this.#deps.queued?.(DEFAULTS.sweepBatch) ?? Promise.resolve(0),
    ]
    for (const step of steps) {
      try {
        await step()
      } catch (error) {
        this.#deps.onError?.(error)
        if (isTransientError(error)) {
          this.#health.failed()
          return
        }
      }
    }
  }

  /**
   * Start sweeping: every `intervalMs`, expire lapsed items, abandon orphaned suspensions,
   * resume what is ready and settle lapsed segments (one sweep at a time). Call it on `ready`,
   * never in warmup. Returns a stop function.
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
          // A sweep that takes longer than a lease renewal's interval (the database, or this
          // process, stalled: writers may not have renewed meanwhile) holds lapsed leases.
          await this.#health.track(this.#sweep())
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

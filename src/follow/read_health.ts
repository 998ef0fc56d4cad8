import { DEFAULTS } from '../defaults.js'

/**
 * Whether a replica's own view of the database can be trusted to say that a writer stopped
 * renewing its lease. A lease looks lapsed after any stretch in which this replica could not have
 * seen it renewed: its reads failed (the database unreachable), or were slow or are still waiting
 * (the database, or this process, stalled: a paused server makes no query fail, and the writers'
 * renewals wait just as long). So a read that fails, or takes longer than `slowMs`, marks the view
 * untrusted; it is trusted again only after `graceMs` (a lease length: a live writer renews
 * meanwhile) with no such read, and while no read has been waiting longer than `slowMs`.
 *
 * Measured on the monotonic clock: only this process's own durations count here.
 */
export class ReadHealth {
  /** When a read last failed or was slow (monotonic milliseconds). */
  #badAt = Number.NEGATIVE_INFINITY
  /** Reads in flight, by their start (monotonic milliseconds). */
  #inflight = new Set<{ started: number }>()

  constructor(
    /** A read slower than this says the database (or this process) stalled. */
    readonly slowMs: number
  ) {}

  /**
   * The health of reads that judge leases of `leaseMs`: a read slower than a third of it (a
   * renewal's interval; at least `DEFAULTS.slowReadFloorMs`) says the view stalled.
   */
  static forLease(leaseMs: number): ReadHealth {
    return new ReadHealth(Math.max(DEFAULTS.slowReadFloorMs, leaseMs / 3))
  }

  /** Time `read`, marking the view untrusted when it fails or is slow. Returns it. */
  async track<T>(read: Promise<T>): Promise<T> {
    const entry = { started: performance.now() }
    this.#inflight.add(entry)
    try {
      const result = await read
      if (performance.now() - entry.started > this.slowMs) this.#badAt = performance.now()
      return result
    } catch (error) {
      this.#badAt = performance.now()
      throw error
    } finally {
      this.#inflight.delete(entry)
    }
  }

  /** A read failed (outside {@link track}). */
  failed() {
    this.#badAt = performance.now()
  }

  /**
   * Whether this replica's reads have been healthy for `graceMs`: none failed or was slow in that
   * time, and none has been waiting longer than `slowMs`.
   */
  healthyFor(graceMs: number): boolean {
    const now = performance.now()
    if (now - this.#badAt < graceMs) return false
    for (const { started } of this.#inflight) if (now - started > this.slowMs) return false
    return true
  }
}

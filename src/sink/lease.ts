import type { StreamStore } from '../store/stream_store.js'
import { isTransientError } from '../store/transient.js'
import type { Outage } from './outage.js'

/**
 * A writer's lease on its stream, renewed every third of `leaseMs` so that it lapses only when
 * the writer's process is gone. While the database is unreachable a failed renewal tells the
 * writer's `outage` (its clock runs even when the agent writes nothing) and is tried again at the
 * outage's backoff, so the lease is renewed as soon as the database is back.
 */
export class LeaseRenewal {
  #timer: NodeJS.Timeout | null
  #probe: NodeJS.Timeout | null = null

  constructor(
    readonly store: StreamStore,
    readonly runId: string,
    readonly leaseMs: number,
    readonly outage: Outage,
    /** The stream is no longer open (ended or failed elsewhere, purged), or no longer ours. */
    readonly onClosed: () => void,
    /** The writer epoch the writer holds the stream under (see `StreamStore.renewLease`). */
    readonly epoch?: number
  ) {
    this.#timer = setInterval(() => void this.#renew(), Math.max(50, leaseMs / 3))
    this.#timer.unref()
  }

  /** Whether renewals still run. */
  get running() {
    return this.#timer !== null
  }

  stop() {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    if (this.#probe) clearTimeout(this.#probe)
    this.#probe = null
  }

  async #renew() {
    try {
      const open = await this.store.renewLease(this.runId, this.leaseMs, this.epoch)
      this.outage.recovered()
      if (!open && this.running) this.onClosed()
    } catch (error) {
      if (!isTransientError(error) || !this.running) return
      this.outage.failed()
      if (this.#probe) return
      this.#probe = setTimeout(() => {
        this.#probe = null
        if (this.running) void this.#renew()
      }, this.outage.nextDelay())
      this.#probe.unref()
    }
  }
}

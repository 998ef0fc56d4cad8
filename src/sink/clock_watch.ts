import { ClockSkewError } from '../errors.js'
import { DEFAULTS } from '../defaults.js'
import { measure, type ClockReading } from '../store/clock.js'
import type { QueryClientContract } from '@adonisjs/lucid/types/database'

/**
 * A sink's watch on the database's clock (the one clock of every replica, `store/clock.ts`): it
 * is read before the sink's first write (`ready()`), again whenever the last reading is older
 * than a sweep interval, and at every sweep (`check()`). A replica whose clock is off by more
 * than `DEFAULTS.clockSkewWarnMs` says so, with the skew measured, through `onError`
 * ({@link ClockSkewError}) at each of those readings.
 */
export class ClockWatch {
  #first: Promise<void> | null = null
  #checking: Promise<ClockReading | null> | null = null
  #checkedAt = Number.NEGATIVE_INFINITY

  constructor(
    readonly client: () => QueryClientContract,
    readonly onError?: (error: unknown) => void
  ) {}

  /**
   * Resolves once the database's clock was read (or the read failed: the host's clock stands in,
   * and the next call tries again). Cheap after the first; reads again in the background when the
   * last reading is older than a sweep interval.
   */
  ready(): Promise<void> {
    if (performance.now() - this.#checkedAt > DEFAULTS.sweepIntervalMs) {
      const reading = this.check().then(
        () => {},
        () => {
          this.#first = null
        }
      )
      this.#first ??= reading
    }
    return this.#first ?? Promise.resolve()
  }

  /**
   * Read the database's clock now (one read at a time) and warn when this host's disagrees.
   * Returns the reading, `null` for a dialect without a clock query.
   *
   * @throws what the read throws
   */
  check(): Promise<ClockReading | null> {
    this.#checking ??= (async () => {
      try {
        const reading = await measure(this.client())
        this.#checkedAt = performance.now()
        if (reading && Math.abs(reading.skewMs) > DEFAULTS.clockSkewWarnMs) {
          this.onError?.(new ClockSkewError(reading.skewMs))
        }
        return reading
      } finally {
        this.#checking = null
      }
    })()
    return this.#checking
  }
}

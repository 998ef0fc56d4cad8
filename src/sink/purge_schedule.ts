import type { PurgeOptions } from './purge.js'
import { purgeError, recordedPurge, type PurgeRunRecord } from './purge_record.js'

/** The longest delay `setTimeout` takes (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647

/** `purge` in the config, resolved: how often this replica purges, and how. */
export interface PurgeScheduleOptions {
  /** Milliseconds between the end of one purge and the start of the next. */
  everyMs: number
  /** Streams per transaction (default `DEFAULTS.purgeBatch`). */
  batchSize?: number
}

/** What the schedule did last and will do next (`agent-stream:inspect --purge`). */
export interface PurgeScheduleStatus {
  everyMs: number
  batchSize: number | null
  /** Whether a purge runs now. */
  running: boolean
  /** Epoch ms the last purge started, its streams removed, its duration; null before the first. */
  lastRunAt: number | null
  lastPurged: number | null
  lastDurationMs: number | null
  /** The last purge's failure (`code: message`), null when it succeeded. */
  lastError: string | null
  /** Streams removed since this replica started the schedule. */
  totalPurged: number
  /** Epoch ms the next purge is due; null once stopped. */
  nextDueAt: number | null
}

/**
 * The background purge: `purge` (the sink's batched `purgeEnded`) every `everyMs`, measured from
 * the end of the last one so two never overlap here. Several replicas running it at once is
 * harmless: each batch's DELETE re-checks the due rule, a stream another replica removed first
 * is counted by that one only, and wake-ups end its readers wherever they are. The timer is
 * unref'd (it never keeps the process alive); a failure is reported to `onError` and the next
 * run is still scheduled. Each run's start and end (streams purged, error) is also stored through
 * `record` (in the database: what `agent-stream:inspect --purge` shows from any process); a
 * record that fails is reported to `onError` and never stops the purge.
 */
export class PurgeSchedule {
  #timer: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null
  #stopped = true
  /** Aborted by `stop`: a purge in flight ends after its current batch. */
  #abort = new AbortController()
  #status: PurgeScheduleStatus

  constructor(
    readonly options: PurgeScheduleOptions,
    readonly purge: (options: PurgeOptions) => Promise<number>,
    readonly onError: (error: unknown) => void = () => {},
    readonly record?: PurgeRunRecord
  ) {
    this.#status = {
      everyMs: options.everyMs,
      batchSize: options.batchSize ?? null,
      running: false,
      lastRunAt: null,
      lastPurged: null,
      lastDurationMs: null,
      lastError: null,
      totalPurged: 0,
      nextDueAt: null,
    }
  }

  /** Start: the first purge is due one period from now. Idempotent. */
  start() {
    if (!this.#stopped) return
    this.#stopped = false
    this.#abort = new AbortController()
    this.#schedule()
  }

  /** Stop scheduling; a purge in flight ends after its batch, and this resolves then. Idempotent. */
  async stop() {
    this.#stopped = true
    this.#abort.abort()
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#status.nextDueAt = null
    await this.#running
  }

  /** Whether the schedule runs (started, not stopped). */
  get started() {
    return !this.#stopped
  }

  /** A copy of what the schedule did last and will do next. */
  status(): PurgeScheduleStatus {
    return { ...this.#status }
  }

  /** Run one purge now (the timer's tick; tests). Resolves when it is done, never rejects. */
  runNow(): Promise<void> {
    this.#running ??= this.#run().finally(() => {
      this.#running = null
    })
    return this.#running
  }

  async #run() {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    const started = Date.now()
    this.#status.running = true
    this.#status.lastRunAt = started
    try {
      const purged = await recordedPurge(
        () => this.purge({ batchSize: this.options.batchSize, signal: this.#abort.signal }),
        this.record,
        this.onError
      )
      this.#status.lastPurged = purged
      this.#status.totalPurged += purged
      this.#status.lastError = null
    } catch (error) {
      this.#status.lastPurged = null
      this.#status.lastError = purgeError(error)
      this.onError(error)
    } finally {
      this.#status.running = false
      this.#status.lastDurationMs = Date.now() - started
      this.#schedule()
    }
  }

  #schedule() {
    if (this.#stopped) return
    const due = Date.now() + this.options.everyMs
    this.#status.nextDueAt = due
    this.#arm(due)
  }

  /** A timer for `due`, in steps Node can time (a longer delay fires after 1 ms). */
  #arm(due: number) {
    const left = due - Date.now()
    this.#timer =
      left > MAX_TIMER_MS
        ? setTimeout(() => this.#arm(due), MAX_TIMER_MS)
        : setTimeout(() => void this.runNow(), Math.max(0, left))
    this.#timer.unref()
  }
}

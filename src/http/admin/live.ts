import type { Parking } from '../../parking/parking.js'

/**
 * The admin console's live queue: ONE watcher per replica, however many consoles are open. It
 * reads the queue's fingerprint (`ParkingQueue.watermark`, index reads only) when the
 * sink's tail hears of any stream changing (a local commit at once; another replica's through
 * the notifiers: PostgreSQL NOTIFY, Redis), and on a poll for what no notifier carries
 * (MySQL/SQLite without Redis, or no stream followed here). Consoles are told only when the
 * fingerprint changed, and then fetch their own view. Nothing runs while no console is open.
 */
export class QueueLive {
  #listeners = new Set<(version: string) => void>()
  #version = ''
  #stopObserving: (() => void) | null = null
  #timer: NodeJS.Timeout | null = null
  #checking = false
  #again = false
  #soon: NodeJS.Timeout | null = null

  constructor(
    readonly parking: Parking,
    readonly options: {
      /** The sink's tail (`observe`): wake-ups for every stream this replica hears of. */
      observe: (listener: (runId: string) => void) => () => void
      /** How often the fingerprint is read without a wake-up, in milliseconds. */
      pollMs: number
      onError?: (error: unknown) => void
    }
  ) {}

  /** The current fingerprint (empty before the first read). */
  get version() {
    return this.#version
  }

  /**
   * Be told the new fingerprint whenever the queue changes; the first read happens at once.
   * Returns the function that stops (the last one stops the watcher).
   * @throws what that first read threw (the database is away: the console's stream does not open)
   */
  async subscribe(listener: (version: string) => void): Promise<() => void> {
    this.#listeners.add(listener)
    if (this.#listeners.size === 1) this.#start()
    const stop = () => {
      this.#listeners.delete(listener)
      if (this.#listeners.size === 0) this.#stop()
    }
    const failed = await this.#check()
    if (failed !== null) {
      stop()
      throw failed
    }
    return stop
  }

  #start() {
    // Several wake-ups in a burst (a decision writes a few frames) cost one read.
    this.#stopObserving = this.options.observe(() => {
      this.#soon ??= setTimeout(() => {
        this.#soon = null
        void this.#check()
      }, 10)
    })
    this.#timer = setInterval(() => void this.#check(), this.options.pollMs)
    this.#timer.unref()
  }

  #stop() {
    this.#stopObserving?.()
    this.#stopObserving = null
    if (this.#timer) clearInterval(this.#timer)
    if (this.#soon) clearTimeout(this.#soon)
    this.#timer = null
    this.#soon = null
  }

  /** Shut down (the provider's shutdown): no console is told anything more. */
  close() {
    this.#listeners.clear()
    this.#stop()
  }

  /** Read the fingerprint, tell the listeners if it changed. Returns what the read threw, or `null`. */
  async #check(): Promise<unknown> {
    if (this.#checking) {
      this.#again = true
      return null
    }
    this.#checking = true
    try {
      do {
        this.#again = false
        const mark = await this.parking.queue.watermark()
        const version = `${mark.pending}.${mark.newestAsked}.${mark.newestDecided}`
        if (version !== this.#version) {
          this.#version = version
          for (const listener of this.#listeners) listener(version)
        }
      } while (this.#again && this.#listeners.size > 0)
      return null
    } catch (error) {
      this.options.onError?.(error)
      return error
    } finally {
      this.#checking = false
    }
  }
}

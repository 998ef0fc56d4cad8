import type { Notifier, NotifierHandlers } from './notifiers/notifier.js'

/**
 * When a tail's notifiers run: started with the first followed stream, stopped after the last
 * one, a notifier that holds a connection (LISTEN) lingering `lingerMs` first (readers come and
 * go). So an idle replica holds no connection and nothing keeps its process alive.
 */
export class NotifierLifecycle {
  #started = new Set<Notifier>()
  #linger = new Map<Notifier, NodeJS.Timeout>()

  constructor(
    readonly notifiers: Notifier[],
    /** What a started notifier calls: wake one stream, or resync all (poll). */
    readonly handlers: NotifierHandlers
  ) {}

  /** Whether a notifier (the poll's timer, LISTEN) or a lingering timer is active. */
  get running() {
    return this.#started.size > 0 || this.#linger.size > 0
  }

  /** Some stream is followed: start every notifier not running, cancel lingering stops. */
  start() {
    for (const notifier of this.notifiers) {
      const timer = this.#linger.get(notifier)
      if (timer) clearTimeout(timer)
      this.#linger.delete(notifier)
      if (this.#started.has(notifier)) continue
      this.#started.add(notifier)
      notifier.start(this.handlers)
    }
  }

  /**
   * Nothing is followed any more: stop the notifiers, those with a `lingerMs` once it passed
   * and `stillIdle()` says so still.
   */
  idle(stillIdle: () => boolean) {
    for (const notifier of [...this.#started]) {
      if (!notifier.lingerMs) {
        void this.#stop(notifier).catch(() => {})
      } else if (!this.#linger.has(notifier)) {
        const timer = setTimeout(() => {
          this.#linger.delete(notifier)
          if (stillIdle()) void this.#stop(notifier).catch(() => {})
        }, notifier.lingerMs)
        timer.unref()
        this.#linger.set(notifier, timer)
      }
    }
  }

  /** Stop every notifier and lingering timer now. */
  async stop() {
    await Promise.all([...this.#started].map((notifier) => this.#stop(notifier)))
  }

  async #stop(notifier: Notifier) {
    const timer = this.#linger.get(notifier)
    if (timer) clearTimeout(timer)
    this.#linger.delete(notifier)
    if (this.#started.delete(notifier)) await notifier.stop()
  }
}

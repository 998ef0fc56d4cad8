import type { Notifier, NotifierHandlers } from './notifier.js'

/**
 * Polling as a notifier: every `intervalMs` it asks the tail to poll the heads of all followed
 * streams in one query (which also finds writers whose lease lapsed). The fallback where there
 * is no NOTIFY, and the slow safety net beside it. Its timer never keeps the process alive and
 * stops as soon as nothing is followed.
 */
export class PollNotifier implements Notifier {
  #timer: NodeJS.Timeout | null = null

  constructor(readonly intervalMs: number) {}

  /** Whether its timer runs. */
  get polling() {
    return this.#timer !== null
  }

  start(handlers: NotifierHandlers) {
    if (this.#timer) return
    this.#timer = setInterval(() => handlers.resync(), this.intervalMs)
    this.#timer.unref()
  }

  async stop() {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }
}

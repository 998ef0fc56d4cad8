import { context, ROOT_CONTEXT } from '@opentelemetry/api'

/**
 * One lane of the deliverer: a round of `work` at once when woken (coalesced with a round
 * running: one more after it), else every `pollMs`. The deliverer runs one lane per endpoint,
 * so a receiver that hangs until each attempt's timeout delays its own rounds only.
 */
export class Lane {
  #timer: NodeJS.Timeout | null = null
  #round: Promise<void> | null = null
  #again = false
  #stopped = true

  constructor(
    readonly work: () => Promise<void>,
    readonly pollMs: number,
    readonly onError?: (error: unknown) => void
  ) {}

  /** Start the timer (and a first round at once). Idempotent. */
  start() {
    if (!this.#stopped) return
    this.#stopped = false
    this.#schedule(0)
  }

  /** A round now, or one more once the running one ends. */
  wake() {
    if (this.#stopped) return
    if (this.#round) {
      this.#again = true
      return
    }
    this.#schedule(0)
  }

  /** No new round; resolves once the running one ended. */
  async stop() {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    await this.#round
  }

  #schedule(delayMs: number) {
    if (this.#stopped) return
    if (this.#timer) clearTimeout(this.#timer)
    // A round serves every run's rows: it runs in no request's or run's trace context (a wake
    // comes from a commit inside one; its timer would carry that context on).
    this.#timer = setTimeout(
      () =>
        context.with(ROOT_CONTEXT, () => {
          this.#timer = null
          this.#round = this.work()
            .catch((error) => this.onError?.(error))
            .finally(() => {
              this.#round = null
              const again = this.#again
              this.#again = false
              this.#schedule(again ? 0 : this.pollMs)
            })
        }),
      delayMs
    )
    this.#timer.unref?.()
  }
}

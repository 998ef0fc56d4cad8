/**
 * A one-shot signal that many waits in turn race against (`race`), each wait a promise of its
 * own: not `Promise.race([next, signal])` per wait, which leaves a reaction on the signal's
 * promise for every wait until it settles (issue 26: a replay's every chunk raced the end of
 * the event loop's turn so, and a stream runner's every chunk its run's stop: the reactions
 * piled up, and each race cost several times the wait it raced).
 */
export class Wake<T> {
  #fired = false
  #value: T | undefined
  /** The wait now racing it, if any. */
  #waiting: ((value: T) => void) | null = null

  /** Whether it fired. */
  get fired() {
    return this.#fired
  }

  /** Fire it with `value` (the wait racing it now resolves to it; later ones at once). Once. */
  fire(value: T) {
    if (this.#fired) return
    this.#fired = true
    this.#value = value
    const waiting = this.#waiting
    this.#waiting = null
    waiting?.(value)
  }

  /**
   * What `pending` settles to, or this signal's value if it fired first (or had). `pending` is
   * handled either way: its later failure is nobody's (the caller that keeps it awaits it again).
   */
  race<R>(pending: Promise<R>): Promise<R | T> {
    if (this.#fired) {
      pending.catch(() => {})
      return Promise.resolve(this.#value as T)
    }
    return new Promise<R | T>((resolve, reject) => {
      this.#waiting = resolve
      pending.then(
        (value) => {
          if (this.#waiting === resolve) this.#waiting = null
          resolve(value)
        },
        (error: unknown) => {
          if (this.#waiting === resolve) this.#waiting = null
          reject(error)
        }
      )
    })
  }
}

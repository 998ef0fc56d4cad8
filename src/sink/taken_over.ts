/**
 * Whether another replica took a writer's stream over: its writer epoch moved on past the one
 * the writer holds (`WriterOptions.epoch`). Marked by a commit refused with `LeaseLostError`, or
 * found by reading the stream's epoch; told once (`onTaken`: the driver stops the agent).
 */
export class TakenOver {
  #taken = false
  #onTaken: (() => void) | undefined

  constructor(
    /** The stream's epoch now (`null`: no such stream). */
    readonly read: () => Promise<number | null>,
    /** The epoch the writer holds the stream under; none: it is never taken over. */
    readonly epoch: number | undefined
  ) {}

  /** Whether it was found taken over: the writer writes nothing more. */
  get taken() {
    return this.#taken
  }

  /** Called once when it is found taken over. */
  set onTaken(callback: () => void) {
    this.#onTaken = callback
  }

  /** It was taken over (a commit was refused for it). */
  mark() {
    if (this.#taken) return
    this.#taken = true
    this.#onTaken?.()
  }

  /** Whether it is taken over, the epoch read now (a read that fails says no: commits check). */
  async check(): Promise<boolean> {
    if (this.#taken || this.epoch === undefined) return this.#taken
    const epoch = await this.read().catch(() => null)
    if (epoch !== null && epoch !== this.epoch) this.mark()
    return this.#taken
  }
}

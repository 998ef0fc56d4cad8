import type { Refusal } from './refusal.js'

type Admitted = { admitted: { release(): void } } | { refused: Refusal }

/**
 * `limits.replicaStreams`: the streamed responses (live viewers) this replica serves at once,
 * every principal together, counted in this process's memory (a storm of viewers is admitted or
 * refused with no round trip to the limiter's store). Past the cap: 503 `too_many_viewers` with
 * `Retry-After`, nothing taken. `null`: no cap.
 */
export class ReplicaCap {
  #held = 0

  constructor(
    readonly cap: number | null | undefined,
    /** The refusal past the cap (`limitRefusal('replicaStreams', ...)`). */
    readonly refusal: () => Refusal
  ) {}

  /** Streamed responses held now (0 without a cap: none are counted). */
  get held() {
    return this.#held
  }

  /**
   * Admit a request: a stream takes a slot first (or is refused), then `admit` asks the
   * principal's rules; the slot is given back with the admission, or at once when those refuse
   * or fail.
   */
  async admit(stream: boolean, admit: () => Promise<Admitted>): Promise<Admitted> {
    if (!stream || !this.cap) return admit()
    if (this.#held >= this.cap) {
      return { refused: this.refusal() }
    }
    this.#held++
    let admitted: Admitted
    try {
      admitted = await admit()
    } catch (error) {
      this.#held--
      throw error
    }
    if ('refused' in admitted) {
      this.#held--
      return admitted
    }
    let held = true
    const release = () => {
      if (!held) return
      held = false
      this.#held--
      admitted.admitted.release()
    }
    return { admitted: { release } }
  }
}

import type { StreamFrame } from '../core/frames.js'
import type { Outage } from './outage.js'
import { watchOutageBuffer } from '../telemetry/metrics/index.js'

/**
 * What one writer holds in memory while the database is unreachable, and how its callers are
 * answered meanwhile. Bytes count UTF-8: text always (it is held to coalesce anyway), other frames
 * written during the outage by their JSON. A caller waiting for a commit when an outage begins
 * is answered at once (its frame is held, in order); a later failure of that frame is handed to
 * `onLateFailure`, for the writer's next call to throw.
 */
export class OutageBuffer {
  #queued = 0
  #held = 0
  #waiting = new Set<() => void>()

  constructor(
    /** The most bytes held before the run is lost. */
    readonly maxBytes: number,
    readonly outage: Outage
  ) {
    watchOutageBuffer(this)
  }

  /** UTF-8 bytes held now: queued frames and held text (the outage buffer usage gauge). */
  get heldBytes() {
    return this.#queued + this.#held
  }

  /** Whether, during an outage, more than `maxBytes` are held. */
  get over() {
    return this.outage.since !== null && this.#queued + this.#held > this.maxBytes
  }

  /** A frame was queued: returns its weight, to give back with {@link dequeued}. */
  queued(frame: StreamFrame): number {
    let bytes = 0
    if (frame.t === 'text') {
      bytes = typeof frame.v === 'string' ? Buffer.byteLength(frame.v) : 0
    } else if (this.outage.since !== null) {
      try {
        bytes = Buffer.byteLength(JSON.stringify(frame) ?? '')
      } catch {}
    }
    this.#queued += bytes
    return bytes
  }

  /** The queued frame is being applied (its text moves into the held text, see {@link hold}). */
  dequeued(bytes: number) {
    this.#queued -= bytes
  }

  /** Text joins the held text. */
  hold(text: string) {
    this.#held += Buffer.byteLength(text)
  }

  /** The held text was committed, or dropped. */
  released() {
    this.#held = 0
  }

  /** An outage began: every caller waiting for a commit goes on. */
  releaseWaiting() {
    for (const release of [...this.#waiting]) release()
  }

  /**
   * A write's promise for its caller: `done` (the commit), or, once the database is
   * unreachable, `valid` (the frame is valid and held). After that, `done`'s failure goes to
   * `onLateFailure`.
   */
  acknowledged(
    done: Promise<void>,
    valid: Promise<unknown>,
    onLateFailure: (error: unknown) => void
  ): Promise<void> {
    const held = async () => {
      await valid
      done.catch(onLateFailure)
    }
    if (this.outage.since !== null) return held()
    return new Promise<void>((resolve, reject) => {
      const release = () => held().then(resolve, reject)
      this.#waiting.add(release)
      done.then(resolve, reject).finally(() => this.#waiting.delete(release))
    })
  }
}

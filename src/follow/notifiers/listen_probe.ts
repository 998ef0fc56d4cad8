import { randomUUID } from 'node:crypto'

/** How often and how patiently a LISTEN connection checks that it hears NOTIFY. */
export interface ListenProbeOptions {
  /** How long a probe's notification may take to arrive, in milliseconds. */
  timeoutMs: number
  /** Milliseconds between probes while the connection is up (the first is at once). */
  everyMs: number
}

/** What a probe needs: send a NOTIFY on another connection, and who to tell when none arrives. */
export interface ListenProbeDeps {
  /** NOTIFY `payload` on the channel from a connection other than the listener's. */
  send: (payload: string) => Promise<void>
  /** Told once, the first time a probe's notification does not arrive. */
  onDeaf: () => void
}

/**
 * Whether a LISTEN connection hears NOTIFY: at once after LISTEN, then every `everyMs`, a
 * notification with a payload of its own (`?probe:<uuid>`, outside the wake-up grammar, so
 * other replicas ignore it) is sent from another connection, and must come back within
 * `timeoutMs`. Behind PgBouncer in transaction mode LISTEN runs on a server connection that is
 * handed to other clients right after, so nothing comes back: told to `onDeaf`, once for the
 * probe's life. A probe that could not be sent (the database away) says nothing.
 */
export class ListenProbe {
  #waiting = new Map<string, () => void>()
  #timer: NodeJS.Timeout | null = null
  #generation = 0
  #told = false

  constructor(
    readonly options: ListenProbeOptions,
    readonly deps: ListenProbeDeps
  ) {}

  /** The listener is up: probe now and every `everyMs` until {@link stop}. */
  start() {
    this.stop()
    const generation = ++this.#generation
    void this.#probe(generation)
    this.#timer = setInterval(() => void this.#probe(generation), this.options.everyMs)
    this.#timer.unref()
  }

  /** The listener is down or stopped: no more probes; those in flight give no verdict. */
  stop() {
    this.#generation++
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    this.#waiting.clear()
  }

  /** A notification heard on the channel: whether it was a probe's (then it is not a wake-up). */
  heard(payload: string | undefined): boolean {
    if (payload === undefined) return false
    const arrived = this.#waiting.get(payload)
    if (!arrived) return payload.startsWith('?probe:')
    this.#waiting.delete(payload)
    arrived()
    return true
  }

  async #probe(generation: number) {
    if (this.#told) return
    const payload = `?probe:${randomUUID()}`
    let timer: NodeJS.Timeout | undefined
    const arrived = new Promise<boolean>((resolve) => {
      this.#waiting.set(payload, () => resolve(true))
      timer = setTimeout(() => resolve(false), this.options.timeoutMs)
      timer.unref()
    })
    try {
      await this.deps.send(payload)
    } catch {
      clearTimeout(timer)
      this.#waiting.delete(payload)
      return
    }
    const heard = await arrived
    clearTimeout(timer)
    this.#waiting.delete(payload)
    if (heard || generation !== this.#generation || this.#told) return
    this.#told = true
    this.deps.onDeaf()
  }
}

import type { Tail } from '../follow/tail.js'
import type { StopMode, StopRequests } from '../store/stop_requests.js'

/** One stream watched for a stop: the revision last seen, and who to tell. */
interface Watched {
  rev: number
  onStop: (mode: StopMode) => void
}

/**
 * How the replica that writes a stream learns that someone stopped it, on any replica: the stop
 * moves the stream's revision on and wakes the tails (PostgreSQL NOTIFY, Redis, in the stop's
 * commit), so a wake-up for a written stream at a revision its own writer did not commit is read
 * (its stop mode, one query for the streams woken together); a poll of every watched stream,
 * every `intervalMs`, covers a notification lost or a replica with the poll alone. Its own
 * commits only move the revision it expects (the tail tells it), and cost no read.
 */
export class StopWatch {
  #watched = new Map<string, Watched>()
  #due = new Set<string>()
  #release: (() => void) | null = null
  #unobserve: (() => void) | null = null
  #timer: NodeJS.Timeout | null = null
  #reading = false

  constructor(
    readonly requests: StopRequests,
    readonly tail: Tail,
    readonly intervalMs: number,
    readonly onError?: (error: unknown) => void
  ) {}

  /**
   * Watch `runId` (a stream this replica writes, opened at revision `rev` or later) until the
   * returned function runs; `onStop` is called once, with the mode, if a stop is recorded.
   */
  watch(runId: string, onStop: (mode: StopMode) => void, rev = -1): () => void {
    const entry: Watched = { rev, onStop }
    this.#watched.set(runId, entry)
    if (this.#watched.size === 1) this.#start()
    // A stop recorded before the watch began is found by the first check.
    this.#soon(runId)
    return () => {
      if (this.#watched.get(runId) !== entry) return
      this.#watched.delete(runId)
      if (this.#watched.size === 0) this.#stop()
    }
  }

  /** How many streams are watched (for tests and shutdown). */
  get size() {
    return this.#watched.size
  }

  #start() {
    this.#release = this.tail.hold()
    this.#unobserve = this.tail.observe((runId, rev, local) => this.#heard(runId, rev, local))
    this.#timer = setInterval(() => {
      for (const runId of this.#watched.keys()) this.#soon(runId)
    }, this.intervalMs)
    this.#timer.unref()
  }

  #stop() {
    this.#release?.()
    this.#unobserve?.()
    if (this.#timer) clearInterval(this.#timer)
    this.#release = this.#unobserve = this.#timer = null
  }

  #heard(runId: string, rev: number | undefined, local: boolean) {
    const entry = this.#watched.get(runId)
    if (!entry) return
    if (local && rev !== undefined) {
      // The writer's own commit moves the revision by one; more means a change in between.
      const expected = entry.rev < 0 || rev === entry.rev + 1
      entry.rev = Math.max(entry.rev, rev)
      if (expected) return
    } else if (rev !== undefined && rev <= entry.rev) {
      return
    }
    this.#soon(runId)
  }

  #soon(runId: string) {
    const first = this.#due.size === 0
    this.#due.add(runId)
    if (first && !this.#reading) setImmediate(() => void this.#read())
  }

  async #read() {
    if (this.#reading || this.#due.size === 0) return
    this.#reading = true
    const runIds = [...this.#due].filter((runId) => this.#watched.has(runId))
    this.#due.clear()
    try {
      const modes = await this.requests.modes(runIds)
      for (const runId of runIds) {
        const entry = this.#watched.get(runId)
        const found = modes.get(runId)
        if (!entry || !found) continue
        entry.rev = Math.max(entry.rev, found.rev)
        if (found.stopMode === null) continue
        this.#watched.delete(runId)
        if (this.#watched.size === 0) this.#stop()
        try {
          entry.onStop(found.stopMode)
        } catch (error) {
          this.onError?.(error)
        }
      }
    } catch {
      // The database away: the next wake-up or poll reads again.
    } finally {
      this.#reading = false
      if (this.#due.size > 0) setImmediate(() => void this.#read())
    }
  }
}

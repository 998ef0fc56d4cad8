/** A stream a purge may remove, as a walk lists it: its run id and its end (epoch ms). */
export interface Candidate {
  runId: string
  endedAt: number
}

/**
 * The streams with `lo <= ended_at < hi`, except those of `skip` ended at `lo` exactly, in
 * `ended_at` order, up to `limit` (`purgeWindow` in `purge_rows.ts`).
 */
export type WindowQuery = (
  lo: number,
  hi: number,
  skip: string[],
  limit: number
) => Promise<Candidate[]>

/** The first window's width (ms), before the walk knows how dense the ended streams are. */
const FIRST_SPAN = 60_000

/**
 * A purge's walk along the streams' `ended_at`, a batch at a time, each batch starting where
 * the last one stopped, through windows of `ended_at` sized to hold about two batches.
 *
 * Why windows: one query "the next `size` ended streams in `ended_at` order" is cheap only when
 * the planner walks the `ended_at` index. A PostgreSQL whose statistics do not know the rows
 * yet (a bulk change autovacuum has not analyzed) sorts EVERY due stream instead, per batch:
 * 100k due streams took minutes. Bounded by a window, whatever the plan, a batch reads about
 * two batches' worth of rows. The window's width follows the streams' density: twice the span
 * of the last full batch; an empty or short window (fewer ended streams there) widens fourfold.
 *
 * Call {@link next} for a batch, then {@link settled} with the streams of it that are still
 * there (not due after all: a parked run's, one reopened meanwhile) before the next.
 */
export class PurgeWalk {
  /** Every stream ended before `#lo` was listed, and those of `#skip` ended at `#lo`. */
  #lo: number | null = null
  #skip: string[] = []
  #span = FIRST_SPAN
  #done = false
  /** The batch handed out and the window it came from, until {@link settled}. */
  #pending: { batch: Candidate[]; hi: number; full: boolean } | null = null

  constructor(
    /** Streams ended before this are due (the purge's cutoff). */
    readonly endedBefore: number,
    readonly size: number,
    /** The earliest `ended_at` before the cutoff, or null when none. */
    readonly first: () => Promise<number | null>,
    readonly window: WindowQuery
  ) {}

  /** The next batch (never empty), or null once every stream ended before the cutoff was listed. */
  async next(): Promise<Candidate[] | null> {
    if (this.#pending) throw new Error('PurgeWalk: settle the last batch first')
    if (this.#done) return null
    if (this.#lo === null) {
      this.#lo = await this.first()
      if (this.#lo === null) return this.#finish()
    }
    while (true) {
      const lo = this.#lo
      const hi = Math.min(this.endedBefore, lo + this.#span)
      const batch = await this.window(lo, hi, this.#skip, this.size)
      if (batch.length === this.size) {
        this.#pending = { batch, hi, full: true }
        return batch
      }
      // Fewer than a batch: the window is exhausted; the next one is wider.
      this.#span *= 4
      if (batch.length > 0) {
        this.#pending = { batch, hi, full: false }
        return batch
      }
      if (hi >= this.endedBefore) return this.#finish()
      this.#lo = hi
      this.#skip = []
    }
  }

  /** The last batch was purged; `kept`: those of it still there. */
  settled(kept: Set<string>) {
    const pending = this.#pending
    if (!pending) return
    this.#pending = null
    if (!pending.full) {
      // Every stream of the window was in the batch.
      if (pending.hi >= this.endedBefore) this.#done = true
      this.#lo = pending.hi
      this.#skip = []
      return
    }
    const lo = this.#lo!
    const last = pending.batch.at(-1)!.endedAt
    // About two batches in the next window, at the density this one showed.
    this.#span = Math.max(2, 2 * (last - lo + 1))
    const skip = last === lo ? [...this.#skip] : []
    for (const { runId, endedAt } of pending.batch) {
      if (endedAt === last && kept.has(runId)) skip.push(runId)
    }
    this.#lo = last
    this.#skip = skip
  }

  #finish() {
    this.#done = true
    return null
  }
}

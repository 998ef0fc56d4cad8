import type { Tail } from '../follow/tail.js'
import type { Delivery, Feed } from '../follow/feed.js'
import type { StreamReads } from '../store/stream_reads.js'
import { compareCursors, isStart, type Cursor } from '../core/cursor.js'
import { DEFAULTS } from '../defaults.js'
import { readPage, type ReadRetry } from './read_path.js'
import { retryTransient } from './outage.js'

/** How long a primed follow nobody took holds its feed (a reply that was never read). */
const UNTAKEN_MS = 10_000

/** A follow's first reads, as {@link PrimedFollow} started them. */
export interface FirstReads {
  feed: Promise<Feed>
  page: Promise<{ deliveries: Delivery[]; more: boolean }> | null
}

/**
 * Start a follow's first reads of `runId` from `start`: the stream's feed (its row and last row,
 * one statement) and, beside it, the reader's first page after the cursor. No page for a reader
 * from the start (a new run's door: nothing to read yet) nor for a stream followed here already
 * (its feed holds the recent rows). What `follow` starts with, now or earlier (a prime).
 */
export function firstReads(
  runId: string,
  start: Cursor,
  tail: Tail,
  store: StreamReads,
  limits: { pageSize: number; pageBytes: number },
  retry: ReadRetry
): FirstReads {
  const rows = Math.min(DEFAULTS.firstPageSize, limits.pageSize)
  const page =
    isStart(start) || tail.following(runId)
      ? null
      : readPage(store, runId, start, rows, limits.pageBytes, retry)
  page?.catch(() => {})
  const feed = retryTransient(() => tail.follow(runId), retry)
  feed.catch(() => {})
  return { feed, page }
}

/**
 * A follow's first reads started before the follow itself: the stream's feed (its row and last
 * row) and the reader's first page after `start`. A re-attach knows its cursor before it has
 * rebuilt its translator: primed then, these reads run while the translator's replay does, and
 * its first event does not wait for a round trip of its own after it.
 *
 * Taken once, by the follow from `start` (`follow(…, primed)`), which then owns the feed as if
 * it had followed it; otherwise released (`release`, or on its own after a while: a reply that
 * was never read). Reads only committed rows: nothing is handed on that is not stored.
 */
export class PrimedFollow {
  readonly runId: string
  readonly start: Cursor
  #reads: FirstReads | null
  #tail: Tail
  #timer: NodeJS.Timeout

  constructor(
    runId: string,
    start: Cursor,
    tail: Tail,
    store: StreamReads,
    limits: { pageSize: number; pageBytes: number },
    retry: ReadRetry
  ) {
    this.runId = runId
    this.start = start
    this.#tail = tail
    this.#reads = firstReads(runId, start, tail, store, limits, retry)
    this.#timer = setTimeout(() => this.release(), UNTAKEN_MS)
    this.#timer.unref()
  }

  /** The reads, for the follow of this stream from this cursor; `null` otherwise, or taken. */
  take(runId: string, start: Cursor): FirstReads | null {
    const reads = this.#reads
    if (!reads || runId !== this.runId || compareCursors(start, this.start) !== 0) return null
    this.#reads = null
    clearTimeout(this.#timer)
    return reads
  }

  /** Not taken: its feed is let go (once it is ready). Taken already: nothing. */
  release() {
    const reads = this.#reads
    if (!reads) return
    this.#reads = null
    clearTimeout(this.#timer)
    reads.feed.then(
      () => this.#tail.unfollow(this.runId),
      () => {}
    )
  }
}

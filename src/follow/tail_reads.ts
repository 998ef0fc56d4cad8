import { setImmediate as nextTurn } from 'node:timers/promises'
import type { StreamReads } from '../store/stream_reads.js'
import type { StreamState } from '../store/rows.js'
import { DEFAULTS } from '../defaults.js'
import type { Feed } from './feed.js'
import { ReadHealth } from './read_health.js'

/**
 * A followed stream to read. `rev`: a revision of the stream read from the database before this
 * read (its head), when there is one; never one a wake-up said (the read gives its own).
 */
export interface Woken {
  runId: string
  feed: Feed
  rev?: number
}

/** How much a tail read brings: rows per read, and UTF-8 bytes (the feeds' window). */
export interface TailReadLimits {
  pageSize: number
  windowBytes: number
}

/**
 * A tail's store reads: the heads of followed streams, and their new rows into their feeds (one
 * read at a time per stream; the streams woken together in one read). Times every read
 * ({@link ReadHealth}: a lease that lapsed while reads failed or stalled says nothing of its
 * writer).
 */
export class TailReads {
  #refreshing = new Map<string, Promise<void>>()
  #dirty = new Set<string>()
  /** Whether this replica's reads could have seen a lease renewed (see {@link ReadHealth}). */
  readonly health: ReadHealth

  constructor(
    readonly reads: StreamReads,
    /** The tail's feeds by run id (read, never changed here). */
    readonly feeds: ReadonlyMap<string, Feed>,
    readonly limits: TailReadLimits,
    health: ReadHealth = new ReadHealth(Number.POSITIVE_INFINITY)
  ) {
    this.health = health
  }

  /** The heads of some streams in one read (see `StreamReads.heads`). */
  heads(runIds: string[]): Promise<Map<string, StreamState>> {
    return this.health.track(this.reads.heads(runIds))
  }

  /**
   * Read several followed streams' new rows, each feed then at the revision the read saw (or the
   * `rev` of its head read before, when higher): those no read is busy
   * with in one store read ({@link StreamReads.pages}), the others (and one alone) one by one,
   * one read at a time per stream. A stream left out of the shared read, whose page came back
   * full, or that was woken again meanwhile, is read on alone. Rejects when a read failed (the rev of
   * a stream whose read failed stays, so the next poll reads it again).
   */
  async readMany(woken: Woken[]): Promise<void> {
    const alone: Promise<void>[] = []
    const batch: Woken[] = []
    for (const entry of woken) {
      if (this.#refreshing.has(entry.runId) || !entry.feed.initialized) {
        alone.push(this.#refreshTo(entry))
      } else {
        batch.push(entry)
      }
    }
    if (batch.length === 1) alone.push(this.#refreshTo(batch[0]))
    if (batch.length < 2) {
      await Promise.all(alone)
      return
    }
    // Shared reads of `tailBatchStreams` streams each, one after the other.
    let previous: Promise<unknown> = Promise.resolve()
    for (let i = 0; i < batch.length; i += DEFAULTS.tailBatchStreams) {
      const chunk = batch.slice(i, i + DEFAULTS.tailBatchStreams)
      const read = previous.then(() => this.#readShared(chunk))
      previous = read
      for (const entry of chunk) {
        // Busy until its rows are in: a wake-up meanwhile waits for this, then reads on.
        const done = read.then((pages) => {
          this.#refreshing.delete(entry.runId)
          const page = pages?.get(entry.runId)
          if (page && !page.more && !this.#dirty.has(entry.runId)) return
          return this.#refreshTo(entry)
        })
        this.#refreshing.set(entry.runId, done)
        alone.push(done)
      }
    }
    await Promise.all(alone)
  }

  /**
   * One shared read of some woken streams, applied to their feeds (each then at its `rev` unless
   * its page came back full); `null` when it failed. Never rejects.
   */
  async #readShared(chunk: Woken[]) {
    // From the head's own row (a text row may have grown): the rows after it, `tailBatchRows`.
    const requests = chunk.map(({ runId, feed }) => ({ runId, fromSeq: feed.head.seq }))
    try {
      const pages = await this.health.track(
        this.reads.pages(requests, DEFAULTS.tailBatchRows + 1, this.limits.windowBytes)
      )
      for (const { runId, feed, rev } of chunk) {
        const page = pages.get(runId)
        if (!page) continue
        feed.apply(page.rows)
        if (!page.more) feed.rev = Math.max(feed.rev, page.rev ?? -1, rev ?? -1)
      }
      return pages
    } catch {
      return null
    }
  }

  /** {@link #refresh}, then the feed is at least at `rev` (when the read succeeded). */
  #refreshTo({ runId, feed, rev }: Woken) {
    return this.#refresh(runId).then(() => {
      if (rev !== undefined) feed.rev = Math.max(feed.rev, rev)
    })
  }

  /**
   * Read a followed stream's new rows into its feed, the feed then at the revision its last page
   * was read with. One read at a time per stream.
   */
  async #refresh(runId: string): Promise<void> {
    const running = this.#refreshing.get(runId)
    if (running) {
      this.#dirty.add(runId)
      return running
    }
    const work = (async () => {
      try {
        do {
          this.#dirty.delete(runId)
          const feed = this.feeds.get(runId)
          if (!feed || feed.missing) return
          await feed.ready
          const { pageSize, windowBytes } = this.limits
          let page
          do {
            page = await this.health.track(
              this.reads.page(runId, feed.head.seq, pageSize, windowBytes)
            )
            feed.apply(page.rows)
            if (!page.more && page.rev !== null) feed.rev = Math.max(feed.rev, page.rev)
            // The event loop turns between pages (a synchronous driver would hold it).
            if (page.more) await nextTurn()
          } while (page.more && this.feeds.has(runId))
        } while (this.#dirty.has(runId))
      } finally {
        this.#refreshing.delete(runId)
      }
    })()
    this.#refreshing.set(runId, work)
    return work
  }
}

import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Tail } from '../follow/tail.js'
import type { Delivery } from '../follow/feed.js'
import type { StreamReads } from '../store/stream_reads.js'
import { compareCursors, formatCursor, type Cursor } from '../core/cursor.js'
import { FAILURE_SENTENCES, type DeliveredFrame } from '../core/frames.js'
import { DEFAULTS } from '../defaults.js'
import {
  deliveryItem,
  readPage,
  type ItemOptions,
  type SegmentEnd,
  type SupersededFrame,
} from './read_path.js'
import { firstReads, type PrimedFollow } from './primed_follow.js'
import { recordLiveReader } from '../telemetry/metrics/index.js'

export type { SegmentEnd } from './read_path.js'

/**
 * Wait for `changed`, or for the signal to abort (a reader that went away stops waiting at once).
 * The abort listener is removed either way, so a long-lived reader does not pile them up.
 */
async function changedOrAborted(changed: Promise<unknown>, signal?: AbortSignal) {
  if (!signal) return changed
  if (signal.aborted) return
  let onAbort!: () => void
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    await Promise.race([changed, aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** The fixed sentence readers get when a stream disappears or its writer died. */
export const RUN_FAILED_MESSAGE = FAILURE_SENTENCES.run_failed

/** How much one reader takes at a time, its signal, and how long it rides out an outage. */
export interface Reading {
  /** Rows per store read, and deliveries per batch from the feed. */
  pageSize: number
  /**
   * UTF-8 bytes of deliveries one reader holds that it has not yet handed on (a store page, a
   * batch from the feed): a batch stops before the delivery that would pass it, its first
   * delivery is taken whatever its size.
   */
  pageBytes: number
  signal?: AbortSignal
  /** Store reads that fail because the database is unreachable are retried this long (ms). */
  outageBoundMs: number
}

/**
 * Replay a stream from `cursor`, then follow it live until its end marker.
 *
 * Pull-based: a frame is read only when the consumer asks for the next one, so a slow reader
 * holds at most one batch (`reading.pageBytes` of deliveries, or one frame larger than that)
 * and slows only itself. Readers that keep up are served from the replica's shared feed; a
 * reader behind it reads the store in pages. `items` says what it yields besides frames:
 * segment ends, superseded components. While the database is unreachable its reads are retried
 * (the feed's polls retry on their own), for up to `outageBoundMs`; then the read's error ends
 * it and its client re-attaches.
 */
export async function* follow(
  runId: string,
  start: Cursor,
  tail: Tail,
  store: StreamReads,
  reading: Reading,
  items: Omit<ItemOptions, 'appendedEnds'> = {},
  primed?: PrimedFollow
): AsyncGenerator<DeliveredFrame | SupersededFrame | SegmentEnd> {
  const segments = items.segments ?? false
  const { pageSize, pageBytes, signal } = reading
  const retry = { boundMs: reading.outageBoundMs, signal }
  // The first store read is small: a re-attaching reader wants its first frame fast.
  let page = Math.min(DEFAULTS.firstPageSize, pageSize)
  // A re-attach (from a cursor) to a stream this replica does not follow yet: its feed's first
  // reads (the stream's row, then its last row) and the reader's first page go at once (the
  // page is not a round trip of its own after them). Its frames are handed on once the feed is
  // ready: which partials this reader has no use for is what the feed has published by then. A
  // stream followed already starts from its feed; so does a reader from the start (a new run's
  // door, before the run wrote anything: no read for nothing before its first event). A
  // re-attach that primed them (`PrimedFollow`) started both while it rebuilt its translator.
  const first =
    primed?.take(runId, start) ??
    firstReads(runId, start, tail, store, { pageSize, pageBytes }, retry)
  let early = first.page
  const feed = await first.feed
  recordLiveReader(1)
  try {
    if (feed.missing) return
    let cursor = start
    // Partials published before this reader came are previews it has no use for.
    let seenPartial = feed.partials
    while (true) {
      let batch: (Delivery | undefined)[] | null = feed.after(
        cursor,
        pageSize,
        seenPartial,
        pageBytes
      )
      // The page read with the feed's first serves a reader behind the feed's window (what it
      // read, from `start`, comes first; rows committed since are read after it), unless it
      // read nothing: rows may have come since, read again.
      const read = early
      early = null
      const fromStore = batch === null
      if (batch === null) {
        // A reader whose client went away reads no more (its consumer may not have stopped yet).
        if (signal?.aborted) return
        // Behind the feed's window: the sink's one store read.
        let got = read ? await read : null
        if (!got || got.deliveries.length === 0)
          got = await readPage(store, runId, cursor, page, pageBytes, retry)
        const { deliveries } = got
        batch = deliveries
        // Each next read twice as large, up to pageSize (as a replay's pages grow): a client that
        // leaves early leaves little read for nothing.
        page = Math.min(page * 2, pageSize)
        // Ahead of this replica's tail: have it catch up, so the end is noticed promptly.
        const last = deliveries.at(-1)
        if (last && compareCursors(last.to, feed.head) > 0) tail.wake(runId)
      }
      if (batch.length > 0) {
        for (let i = 0; i < batch.length; i++) {
          // Let go of what was handed on: a stalled consumer pins only what it has not taken.
          const delivery = batch[i]!
          batch[i] = undefined
          if (delivery.kind === 'partial') seenPartial = delivery.n!
          else cursor = delivery.to
          const item = deliveryItem(delivery, cursor, items)
          if (item) yield item
        }
        // Let the event loop turn between store pages (as `replayStored` does): with a
        // synchronous driver (better-sqlite3) reading a long stream page after page would
        // otherwise hold the process (other requests, this response's corked writes, a client
        // that went away) until the reader caught up with the feed.
        if (fromStore) {
          await nextTurn()
          // Meanwhile the sink may have shut down, or the client gone.
          if (feed.closed || signal?.aborted) return
        }
        continue
      }
      // A segment reader waits past an ended stream (a resume reopens it); it stops at the
      // segment end it was given, or when the stream disappears.
      if ((!segments && feed.finishedAt(cursor)) || feed.closed || signal?.aborted) return
      // Gone (purged), or lost (its failure could not be stored): after everything stored.
      if (feed.gone || feed.lost) {
        yield {
          t: 'error',
          code: 'run_failed',
          message: RUN_FAILED_MESSAGE,
          cursor: formatCursor(cursor),
        }
        return
      }
      await changedOrAborted(feed.changed(), signal)
    }
  } finally {
    recordLiveReader(-1)
    tail.unfollow(runId)
  }
}

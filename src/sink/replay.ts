import { compareCursors, formatCursor, type Cursor } from '../core/cursor.js'
import type { DeliveredFrame } from '../core/frames.js'
import { deliveryFrame, rowToDelivery, type Delivery } from '../follow/feed.js'
import type { StoredRow, StreamStore } from '../store/stream_store.js'
import { retryTransient } from './outage.js'

/**
 * How a reader rides out the database going away: its store reads are retried with backoff for
 * up to `boundMs` (then the read's error is thrown: the reader ends and its client re-attaches
 * from its cursor), and not at all once `signal` aborted.
 */
export interface ReadRetry {
  boundMs: number
  signal?: AbortSignal
}

/**
 * Where a segment of a stream ended (`SinkWriter.end()`: the run parked, finished or failed).
 * Only readers that ask for segments get it; a resumed run's frames follow it. `appended` is set
 * only on the end marker after frames appended to an ended stream, for a replay that asked for
 * those too (`appendedEnds`).
 */
export interface SegmentEnd {
  t: 'end'
  cursor: string
  appended?: true
}

/**
 * THE store read: the rows of one page from `cursor` (`seq >= cursor.seq`, at most `limit`) as
 * the deliveries a reader at `cursor` receives (text sliced after it). `rows` is how many rows
 * the page held (fewer than `limit`: the stream has no more). With `retry`, a read that fails
 * because the database is unreachable is retried (see {@link ReadRetry}).
 */
export async function readPage(
  store: StreamStore,
  runId: string,
  cursor: Cursor,
  limit: number,
  retry?: ReadRetry
): Promise<{ deliveries: Delivery[]; rows: number }> {
  // Seqs start at 1: from the stream's start a page is rows 1..limit, not 0..limit-1 (one
  // short, which a replay took for the stream's end).
  const read = () => store.rows(runId, Math.max(1, cursor.seq), limit)
  const rows = retry ? await retryTransient(read, retry) : await read()
  const deliveries: Delivery[] = []
  for (const row of rows) {
    const delivery = rowToDelivery(row, cursor)
    if (delivery) deliveries.push(delivery)
  }
  return { deliveries, rows: rows.length }
}

/**
 * What a reader yields for a delivery, `cursor` being the position after it: the frame, a
 * {@link SegmentEnd} for a segment end when `segments` (and for an appended end when
 * `appendedEnds`), else nothing (a superseded component, an end a plain reader does not see).
 */
export function deliveryItem(
  delivery: Delivery,
  cursor: Cursor,
  options: { segments?: boolean; appendedEnds?: boolean } = {}
): DeliveredFrame | SegmentEnd | null {
  const frame = deliveryFrame(delivery)
  if (frame) return { ...frame, cursor: formatCursor(cursor) } as DeliveredFrame
  if (options.segments && delivery.kind === 'end') {
    if (!delivery.appended) return { t: 'end', cursor: formatCursor(cursor) }
    if (options.appendedEnds) return { t: 'end', cursor: formatCursor(cursor), appended: true }
  }
  return null
}

export interface ReplayOptions {
  /** Exclusive start. Default: the start of the stream. */
  after?: Cursor
  /**
   * Inclusive end; inside a text row (`{ seq, offset }`) that row's text is cut at `offset`
   * UTF-16 units. Default: the stream's last stored row.
   */
  until?: Cursor
  /** Rows per store read (at least 2). */
  pageSize: number
  /** Also yield the end markers after appended frames, flagged `appended`. Default false. */
  appendedEnds?: boolean
  /** Retry reads for up to this long while the database is unreachable. Default: no retry. */
  outageBoundMs?: number
}

/**
 * The stored frames of a stream from `after` to `until`, read in pages: exactly what
 * `LucidTokenStreamSink.segments()` yields for stored rows (superseded components skipped, a
 * {@link SegmentEnd} per segment end, partials never, which are not stored). Ends at the last
 * stored row; it never waits for more.
 */
export async function* replayStored(
  store: StreamStore,
  runId: string,
  options: ReplayOptions
): AsyncGenerator<DeliveredFrame | SegmentEnd> {
  const { until, pageSize } = options
  const itemOptions = { segments: true, appendedEnds: options.appendedEnds }
  let cursor: Cursor = options.after ?? { seq: 0 }
  while (!until || compareCursors(cursor, until) < 0) {
    const limit = until ? Math.min(pageSize, until.seq - cursor.seq + 1) : pageSize
    if (limit <= 0) return
    const retry = options.outageBoundMs ? { boundMs: options.outageBoundMs } : undefined
    const page = await readPage(store, runId, cursor, limit, retry)
    for (let delivery of page.deliveries) {
      if (until && compareCursors(delivery.to, until) > 0) {
        // Only a text row at `until.seq` goes past a cursor inside it: cut it there.
        const cut = until.offset! - (delivery.from ?? 0)
        if (delivery.kind !== 'text' || cut <= 0) return
        delivery = { ...delivery, text: delivery.text!.slice(0, cut), to: until }
      }
      cursor = delivery.to
      const item = deliveryItem(delivery, cursor, itemOptions)
      if (item) yield item
    }
    // Fewer rows than asked: the stream has no more. No delivery: nothing moves (only the
    // cursor's own row was read), so reading again would loop.
    if (page.rows < limit || page.deliveries.length === 0) return
  }
}

/**
 * The raw stored rows of a stream from `fromSeq` (inclusive) to `toSeq` (inclusive, default the
 * last), in pages of `pageSize`: for tools that show rows as stored (`agent-stream:inspect`).
 */
export async function* storedRows(
  store: StreamStore,
  runId: string,
  options: { fromSeq?: number; toSeq?: number; pageSize: number }
): AsyncGenerator<StoredRow[]> {
  let from = options.fromSeq ?? 1
  const to = options.toSeq ?? Number.POSITIVE_INFINITY
  while (from <= to) {
    const limit = Math.min(options.pageSize, to - from + 1)
    const rows = await store.rows(runId, from, limit)
    if (rows.length > 0) yield rows
    if (rows.length < limit) return
    from = rows.at(-1)!.seq + 1
  }
}

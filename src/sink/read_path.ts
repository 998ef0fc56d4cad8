import { setImmediate as nextTurn } from 'node:timers/promises'
import { compareCursors, formatCursor, isStart, parseCursor, type Cursor } from '../core/cursor.js'
import { codePointStart } from '../core/text.js'
import type { DeliveredFrame } from '../core/frames.js'
import { deliveryFrame, rowToDelivery, type Delivery } from '../follow/feed.js'
import type { StoredRow, StreamHead } from '../store/rows.js'
import type { StreamReads } from '../store/stream_reads.js'
import { retryTransient } from './outage.js'
import { recordReplayRows } from '../telemetry/metrics/index.js'

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
 * THE store read: the rows of one page from `cursor` (`seq >= cursor.seq`, at most `limit` rows
 * and `maxBytes` UTF-8 bytes of bodies, see `StreamReads.page`) as the deliveries a reader at
 * `cursor` receives (text sliced after it). `more`: rows may follow (else the stream has no
 * more). With `retry`, a read that fails because the database is unreachable is retried (see
 * {@link ReadRetry}).
 */
export async function readPage(
  store: StreamReads,
  runId: string,
  cursor: Cursor,
  limit: number,
  maxBytes: number,
  retry?: ReadRetry
): Promise<{ deliveries: Delivery[]; more: boolean }> {
  // Seqs start at 1: from the stream's start a page is rows 1..limit, not 0..limit-1 (one
  // short, which a replay took for the stream's end).
  const read = () => store.page(runId, Math.max(1, cursor.seq), limit, maxBytes)
  const page = retry ? await retryTransient(read, retry) : await read()
  recordReplayRows(page.rows.length)
  const deliveries: Delivery[] = []
  for (const row of page.rows) {
    const delivery = rowToDelivery(row, cursor)
    if (delivery) deliveries.push(delivery)
  }
  return { deliveries, more: page.more }
}

/**
 * A component a later one with the same id replaced, for readers that asked for those
 * (`superseded`): a door that must translate a stream the same whether a reader met the
 * component before or after it was replaced (it still closes open text, say).
 */
export type SupersededFrame = DeliveredFrame & { readonly superseded: true }

/** What a reader asks to be given besides frames (see {@link deliveryItem}). */
export interface ItemOptions {
  /** Segment ends, as {@link SegmentEnd}. */
  segments?: boolean
  /** With `segments`, also the end markers after frames appended to an ended stream. */
  appendedEnds?: boolean
  /** Superseded components, flagged (see {@link SupersededFrame}). */
  superseded?: boolean
}

/** Where the position after an item is kept, as the cursor object it was made from. */
const POSITION = Symbol('position')

/**
 * The position after an item this package's readers yield (`replay`, `segments`, `subscribe`):
 * the {@link Cursor} the item's `cursor` string was formatted from, so the package's own readers
 * never parse it back. An item made elsewhere (no position kept) has its `cursor` parsed.
 */
export function positionOf(item: { cursor: string }): Cursor {
  return (item as { [POSITION]?: Cursor })[POSITION] ?? parseCursor(item.cursor)
}

/** `item` with its position kept (not enumerable: copies, JSON and host code never see it). */
function positioned<T extends object>(item: T, cursor: Cursor): T {
  Object.defineProperty(item, POSITION, { value: cursor })
  return item
}

/**
 * What a reader yields for a delivery, `cursor` being the position after it: the frame, a
 * {@link SegmentEnd} for a segment end when `segments` (and for an appended end when
 * `appendedEnds`), a superseded component when `superseded` (flagged), else nothing. Each
 * keeps `cursor` itself too ({@link positionOf}).
 */
export function deliveryItem(
  delivery: Delivery,
  cursor: Cursor,
  options: ItemOptions = {}
): DeliveredFrame | SupersededFrame | SegmentEnd | null {
  const frame = deliveryFrame(delivery)
  if (frame) return positioned({ ...frame, cursor: formatCursor(cursor) } as DeliveredFrame, cursor)
  if (options.superseded && delivery.superseded && delivery.frame) {
    return positioned(
      { ...delivery.frame, cursor: formatCursor(cursor), superseded: true } as SupersededFrame,
      cursor
    )
  }
  if (options.segments && delivery.kind === 'end') {
    if (!delivery.appended)
      return positioned<SegmentEnd>({ t: 'end', cursor: formatCursor(cursor) }, cursor)
    if (options.appendedEnds) {
      return positioned<SegmentEnd>(
        { t: 'end', cursor: formatCursor(cursor), appended: true },
        cursor
      )
    }
  }
  return null
}

export interface ReplayOptions {
  /** Exclusive start. Default: the start of the stream. */
  after?: Cursor
  /**
   * Inclusive end; inside a text row (`{ seq, offset }`) that row's text is cut at `offset`
   * UTF-16 units (at the pair's start when `offset` falls between the halves of a pair).
   * Default: the stream's last stored row.
   */
  until?: Cursor
  /** Rows per store read (at least 2). */
  pageSize: number
  /** UTF-8 bytes of bodies per store read (the first two rows whatever their size). */
  pageBytes: number
  /** Also yield the end markers after appended frames, flagged `appended`. Default false. */
  appendedEnds?: boolean
  /** Also yield superseded components, flagged (see {@link SupersededFrame}). Default false. */
  superseded?: boolean
  /** Retry reads for up to this long while the database is unreachable. Default: no retry. */
  outageBoundMs?: number
  /** Rows of the first store read; each next one reads twice as many, up to `pageSize`. */
  firstPageSize?: number
  /** No store read starts once this says so (the client went away, the sink shut down). */
  stopped?: () => boolean
  /**
   * Read the next page while this one is handed on; each page then holds at most half of
   * `pageBytes`, so the two together stay within it. Default false.
   */
  prefetch?: boolean
}

/**
 * The stored frames of a stream from `after` to `until`, read in pages: exactly what
 * `LucidTokenStreamSink.segments()` yields for stored rows (superseded components skipped, a
 * {@link SegmentEnd} per segment end, partials never, which are not stored). Ends at the last
 * stored row; it never waits for more.
 */
export async function* replayStored(
  store: StreamReads,
  runId: string,
  options: ReplayOptions
): AsyncGenerator<DeliveredFrame | SupersededFrame | SegmentEnd> {
  const { until } = options
  let pageSize = Math.max(2, Math.min(options.firstPageSize ?? options.pageSize, options.pageSize))
  const itemOptions = {
    segments: true,
    appendedEnds: options.appendedEnds,
    superseded: options.superseded,
  }
  const retry = options.outageBoundMs ? { boundMs: options.outageBoundMs } : undefined
  // Reading ahead holds two pages at once: each gets half the bytes.
  const pageBytes = options.prefetch
    ? Math.max(1, Math.floor(options.pageBytes / 2))
    : options.pageBytes
  /** The read of the page at `from`, or `null` when `until` was reached. */
  const read = (from: Cursor) => {
    // (A text row read is read whole: a cursor in `until`'s row, when `until` names the whole
    // row, has had all of it.)
    if (until && (compareCursors(from, until) >= 0 || wholeRowDone(from, until))) return null
    if (options.stopped?.()) return null
    // A page starts at the cursor's row, or at seq 1 from the start (see readPage).
    const limit = until ? Math.min(pageSize, until.seq - Math.max(1, from.seq) + 1) : pageSize
    if (limit <= 0) return null
    const reading = readPage(store, runId, from, limit, pageBytes, retry)
    pageSize = Math.min(pageSize * 2, options.pageSize)
    return reading
  }
  let cursor: Cursor = options.after ?? { seq: 0 }
  let next = read(cursor)
  while (next) {
    const page = await next
    // The page stopped short of its limits: the stream has no more. No delivery: nothing moves
    // (only the cursor's own row was read), so reading again would loop.
    const last = page.more ? page.deliveries.at(-1) : undefined
    next = null
    if (last && options.prefetch) {
      // The next page is read while this one is handed on (the database's round trip overlaps
      // the consumer's work); a consumer that stops leaves it unread.
      next = read(last.to)
      next?.catch(() => {})
    }
    for (const delivery of page.deliveries) {
      if (until && compareCursors(delivery.to, until) > 0) {
        // Only a text row at `until.seq` goes past a cursor inside it: cut it there, or at the
        // start of the pair `until` falls in (as a reader after `until` starts there).
        if (delivery.kind !== 'text' || delivery.to.seq !== until.seq) return
        const from = delivery.from ?? 0
        const cut = codePointStart(delivery.text!, until.offset! - from)
        if (cut <= 0) return
        const to = { seq: until.seq, offset: from + cut }
        const item = deliveryItem({ ...delivery, text: delivery.text!.slice(0, cut), to }, to)
        if (item) yield item
        return
      }
      cursor = delivery.to
      const item = deliveryItem(delivery, cursor, itemOptions)
      if (item) yield item
    }
    if (!last) return
    // Let the event loop turn between pages: with a synchronous driver (better-sqlite3) a long
    // replay would otherwise hold the process (other requests, this response's own socket
    // writes, a client that went away) until its last page.
    await nextTurn()
    next ??= read(cursor)
  }
}

function wholeRowDone(cursor: Cursor, until: Cursor) {
  return until.offset === undefined && cursor.seq >= until.seq
}

/**
 * The raw stored rows of a stream from `fromSeq` (inclusive) to `toSeq` (inclusive, default the
 * last), in pages of at most `pageSize` rows and `pageBytes` UTF-8 bytes of bodies: for tools
 * that show rows as stored (`agent-stream:inspect`).
 */
export async function* storedRows(
  store: StreamReads,
  runId: string,
  options: { fromSeq?: number; toSeq?: number; pageSize: number; pageBytes: number }
): AsyncGenerator<StoredRow[]> {
  let from = options.fromSeq ?? 1
  const to = options.toSeq ?? Number.POSITIVE_INFINITY
  while (from <= to) {
    const limit = Math.min(options.pageSize, to - from + 1)
    const { rows, more } = await store.page(runId, from, limit, options.pageBytes, {
      createdAt: true,
    })
    if (rows.length > 0) yield rows
    if (!more || rows.length === 0) return
    from = rows.at(-1)!.seq + 1
    // The event loop turns between pages (see `replayStored`).
    await nextTurn()
  }
}

/**
 * Whether `cursor` is past the stream's stored head: after its last row, or inside its last
 * text row beyond the text stored (see `LucidTokenStreamSink.beyondHead`). `known`: the stream's
 * row as the caller just read it; the last row is then read only when the cursor names the
 * stream's last row while the stream is open (its text may still grow). The read is retried
 * (see {@link ReadRetry}).
 */
export async function beyondHead(
  store: StreamReads,
  runId: string,
  cursor: Cursor,
  known: Pick<StreamHead, 'lastSeq' | 'status'> | undefined,
  retry: ReadRetry
): Promise<boolean> {
  if (isStart(cursor)) return false
  if (known && (cursor.seq !== known.lastSeq || known.status !== 'open')) {
    return cursor.seq > known.lastSeq
  }
  const head = await storedHead(store, runId, retry)
  if (!head) return true
  return head.offset !== undefined && cursor.seq === head.seq
    ? compareCursors(cursor, head) > 0
    : cursor.seq > head.seq
}

/**
 * The position after everything stored of a stream: after its last row, or, when that row is
 * text (it may still grow), right after the text stored. `null` when it has no row. The read
 * is retried (see {@link ReadRetry}).
 */
export async function storedHead(
  store: StreamReads,
  runId: string,
  retry: ReadRetry
): Promise<Cursor | null> {
  const last = await retryTransient(() => store.lastRow(runId), retry)
  if (!last) return null
  return last.kind === 'text' ? { seq: last.seq, offset: last.body.length } : { seq: last.seq }
}

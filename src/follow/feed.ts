import { compareCursors, type Cursor } from '../core/cursor.js'
import { codePointStart } from '../core/text.js'
import type { StreamFrame } from '../core/frames.js'
import { APPENDED_END, type RowKind, type StoredRow } from '../store/rows.js'

/**
 * One piece of a stream as readers receive it: a stored row, the part of a text row that grew,
 * or a live-only partial component (which has no position of its own: `to` is where it was
 * published).
 */
export interface Delivery {
  kind: RowKind | 'partial'
  /** The position right after this piece: the cursor a reader holds once it has it. */
  to: Cursor
  /** For text: the row's offset this piece starts at. */
  from?: number
  /** For text: the characters from `from` to `to.offset`. */
  text?: string
  /** For every other kind: the frame. */
  frame?: StreamFrame
  componentId?: string | null
  /** A later component with the same id replaced this one: skipped, but the cursor moves on. */
  superseded?: boolean
  /** For a partial: its number in the feed, so a reader takes each partial once. */
  n?: number
  /** For an end marker: it follows frames appended to an ended stream (no segment ended). */
  appended?: boolean
  /** What it holds, in UTF-8 bytes (the text, or the frame's JSON): what memory bounds count. */
  bytes: number
}

/** UTF-8 bytes of a string: the unit of every memory bound on deliveries. */
export const utf8Bytes = (value: string) => Buffer.byteLength(value, 'utf8')

/** A text delivery from `from` on (`text` is the row's text from there). */
const textDelivery = (seq: number, from: number, text: string, length: number): Delivery => ({
  kind: 'text',
  from,
  text,
  to: { seq, offset: length },
  bytes: utf8Bytes(text),
})

/**
 * Convert a stored row into the delivery a reader at `cursor` receives (text sliced after it). A
 * cursor between the halves of a pair (never minted: a client made it up) reads as the pair's
 * start, so the whole character comes and no slice begins with a lone half.
 */
export function rowToDelivery(row: StoredRow, cursor?: Cursor): Delivery | null {
  if (row.kind === 'text') {
    let from = 0
    if (cursor && cursor.seq === row.seq) {
      if (cursor.offset === undefined || cursor.offset >= row.body.length) return null
      from = codePointStart(row.body, cursor.offset)
    }
    return textDelivery(row.seq, from, row.body.slice(from), row.body.length)
  }
  // A Durable Streams append (the write path's): no frame of a run.
  if (row.kind === 'data' || (cursor && cursor.seq >= row.seq)) return null
  return {
    kind: row.kind,
    to: { seq: row.seq },
    frame: row.kind === 'end' ? undefined : (JSON.parse(row.body) as StreamFrame),
    ...(row.kind === 'end' && row.body === APPENDED_END ? { appended: true } : {}),
    componentId: row.componentId,
    superseded: row.superseded,
    bytes: utf8Bytes(row.body),
  }
}

/** The frame a delivery yields; `null` for an end marker or a superseded component. */
export function deliveryFrame(delivery: Delivery): StreamFrame | null {
  if (delivery.superseded || delivery.kind === 'end') return null
  if (delivery.kind === 'text') return { t: 'text', v: delivery.text! }
  return delivery.frame!
}

/**
 * What ONE replica knows of one followed stream: its head and a window of the most recent
 * deliveries, bounded in count (`capacity`) and in bytes (`maxBytes`, UTF-8), shared by every
 * reader of the stream on this replica. Readers that keep up are served from the window (no
 * database read); a reader behind it reads its own pages from the store and so slows only itself.
 */
export class Feed {
  /** Readers on this replica. */
  refs = 0
  /** Position right after the last row this replica has read. */
  head: Cursor = { seq: 0 }
  /** Seq of the end marker when it is the last row known, else `null`. */
  endedAt: number | null = null
  /** The stream's row was deleted (purge or close). */
  gone = false
  /** This replica stopped following (shutdown): readers end without an error. */
  closed = false
  /**
   * The stream's writer stopped (or its lease lapsed) and its failure could not be stored (the
   * database refuses the stream's writes): readers end with `run_failed` from memory, after what
   * is stored. Rows that come later clear it (the stream goes on).
   */
  lost = false
  /** The stream's status as last known (heads, or an end marker handed over). */
  status: 'open' | 'ended' | 'failed' = 'open'
  /** The stream did not exist when the first reader came. */
  missing = false
  /**
   * The stream's revision this replica has every change up to: only ever one read from the
   * database with the rows (or committed by its own writer), never one a wake-up claimed.
   */
  rev = -1
  /** Resolves once the head has been read from the store. */
  ready: Promise<void> | null = null
  /** Whether `ready` has resolved: before that, rows handed over are left to a read. */
  initialized = false

  #window: Delivery[] = []
  /** UTF-8 bytes the window's deliveries hold. */
  #bytes = 0
  /** Position right before the first delivery of the window. */
  #windowStart: Cursor = { seq: 0 }
  #waiters: (() => void)[] = []
  #partials = 0

  constructor(
    readonly runId: string,
    readonly capacity: number,
    readonly maxBytes = Number.POSITIVE_INFINITY
  ) {}

  /** Start the window at the stream's current last row. */
  reset(last: StoredRow | null, status: 'open' | 'ended' | 'failed' = 'open') {
    this.status = status
    this.head = last
      ? last.kind === 'text'
        ? { seq: last.seq, offset: last.body.length }
        : { seq: last.seq }
      : { seq: 0 }
    this.endedAt = last?.kind === 'end' ? last.seq : null
    this.#window = []
    this.#bytes = 0
    this.#windowStart = this.head
    this.initialized = true
  }

  /**
   * Apply rows read from the store (or handed over by a local writer) that continue the head.
   * Rows at or before the head are ignored, except the head's own text row, which may have grown.
   */
  apply(rows: StoredRow[]) {
    let changed = false
    for (const row of rows) {
      if (row.seq < this.head.seq) continue
      if (row.seq === this.head.seq && row.kind !== 'text') continue
      const delivery = rowToDelivery(row, this.head)
      if (!delivery) continue
      this.#push(delivery)
      changed = true
    }
    if (changed) {
      this.lost = false
      this.#wake()
    }
  }

  /** A text row that grew in place (handed over by a local writer right after its commit). */
  grow(seq: number, body: string) {
    this.apply([{ seq, kind: 'text', body, componentId: null, superseded: false }])
  }

  /** A live-only partial component, placed at the current head. */
  partial(frame: StreamFrame) {
    const bytes = utf8Bytes(JSON.stringify(frame))
    this.#push({ kind: 'partial', to: this.head, frame, n: ++this.#partials, bytes })
    this.#wake()
  }

  /** The stream's row is gone: readers end. */
  markGone() {
    this.gone = true
    this.#wake()
  }

  /** The stream's failure could not be stored: readers end with `run_failed` (see `lost`). */
  markLost() {
    this.lost = true
    this.#wake()
  }

  /** This replica stops following: readers end quietly. */
  markClosed() {
    this.closed = true
    this.#wake()
  }

  /** The status the stream's row gives (a reopen turns an ended stream open again). */
  setStatus(status: 'open' | 'ended' | 'failed') {
    if (status === this.status) return
    this.status = status
    this.#wake()
  }

  /** Whether a reader at `cursor` has everything: at the end marker, and the stream not reopened. */
  finishedAt(cursor: Cursor) {
    return this.endedAt !== null && cursor.seq >= this.endedAt && this.status !== 'open'
  }

  /**
   * Whether a reader at `cursor` is served from the window (its head read, the cursor not before
   * the window's first delivery), not from the store.
   */
  holds(cursor: Cursor) {
    return this.initialized && compareCursors(cursor, this.#windowStart) >= 0
  }

  /** Deliveries held in the window. */
  get length() {
    return this.#window.length
  }

  /** UTF-8 bytes the window holds (at most `maxBytes`, or its one newest delivery). */
  get bytes() {
    return this.#bytes
  }

  /** Number of the last partial published so far (a new reader skips those). */
  get partials() {
    return this.#partials
  }

  /**
   * Deliveries after `cursor` from the window, at most `limit` and `maxBytes` (UTF-8; the first
   * delivery whatever its size); `null` when the cursor is before the window (the reader must
   * read the store). Partials numbered above `seenPartial` that were published at or after the
   * cursor are included in order.
   */
  after(
    cursor: Cursor,
    limit: number,
    seenPartial: number,
    maxBytes = Number.POSITIVE_INFINITY
  ): Delivery[] | null {
    if (compareCursors(cursor, this.#windowStart) < 0) return null
    const out: Delivery[] = []
    let bytes = 0
    for (let delivery of this.#window) {
      if (delivery.kind === 'partial') {
        if (delivery.n! <= seenPartial || compareCursors(delivery.to, cursor) < 0) continue
      } else {
        if (compareCursors(delivery.to, cursor) <= 0) continue
        if (
          delivery.kind === 'text' &&
          cursor.seq === delivery.to.seq &&
          cursor.offset !== undefined
        ) {
          // `from` is a code point boundary: so is the pair start a cursor inside a pair reads as.
          const skip = codePointStart(delivery.text!, cursor.offset - (delivery.from ?? 0))
          if (skip > 0) {
            const from = (delivery.from ?? 0) + skip
            const text = delivery.text!.slice(skip)
            delivery = textDelivery(cursor.seq, from, text, delivery.to.offset!)
          }
        }
      }
      if (out.length >= limit || (out.length > 0 && bytes + delivery.bytes > maxBytes)) break
      bytes += delivery.bytes
      out.push(delivery)
    }
    return out
  }

  /** Resolves on the next change to this stream (new rows, a partial, gone). */
  changed(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve))
  }

  #push(delivery: Delivery) {
    if (delivery.kind !== 'partial') {
      this.head = delivery.to
      this.endedAt = delivery.kind === 'end' ? delivery.to.seq : null
      // An end marker handed over or read means the stream ended (until a reopen says otherwise).
      if (delivery.kind === 'end' && this.status === 'open') this.status = 'ended'
      if (delivery.componentId && !delivery.superseded) {
        for (const earlier of this.#window) {
          if (earlier.componentId === delivery.componentId) earlier.superseded = true
        }
      }
    }
    this.#window.push(delivery)
    this.#bytes += delivery.bytes
    // Over either bound, the oldest go (the newest stays, whatever its size).
    while (
      this.#window.length > this.capacity ||
      (this.#window.length > 1 && this.#bytes > this.maxBytes)
    ) {
      const dropped = this.#window.shift()!
      this.#bytes -= dropped.bytes
      if (dropped.kind !== 'partial') this.#windowStart = dropped.to
    }
  }

  #wake() {
    const waiters = this.#waiters
    this.#waiters = []
    for (const resolve of waiters) resolve()
  }
}

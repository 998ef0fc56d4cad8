import type { Cursor } from '../../core/cursor.js'
import type { DurableSource, SourceBatch } from '../source.js'

/** What a read gathered: messages or bytes, where it ends, and whether it reached the tail. */
export interface Gathered {
  messages: unknown[]
  bytes: Uint8Array[]
  /** Bytes gathered (the body's size, about). */
  size: number
  /** The position after what was gathered. */
  next: Cursor
  /** Whether this reaches the tail as it was (else the chunk limit cut it). */
  upToDate: boolean
  /** The stream is closed and `next` is its final position. */
  closed: boolean
  /** Whether any message or byte was gathered. */
  hasData: boolean
}

/** An empty gathering at `after`. */
export function emptyAt(after: Cursor): Gathered {
  return {
    messages: [],
    bytes: [],
    size: 0,
    next: after,
    upToDate: false,
    closed: false,
    hasData: false,
  }
}

/** Add `batch` to `into`. */
export function addBatch(into: Gathered, batch: SourceBatch) {
  if (batch.messages && batch.messages.length > 0) {
    for (const message of batch.messages) {
      into.messages.push(message)
      into.size += JSON.stringify(message).length + 1
    }
    into.hasData = true
  }
  if (batch.bytes && batch.bytes.byteLength > 0) {
    into.bytes.push(batch.bytes)
    into.size += batch.bytes.byteLength
    into.hasData = true
  }
  into.next = batch.next
  if (batch.closed) into.closed = true
}

/**
 * Catch-up: what follows `after` now, batch by batch, until the tail (`upToDate`) or until
 * `chunkBytes` are gathered (the rest is the next read's).
 */
export async function gather(
  source: DurableSource,
  after: Cursor,
  chunkBytes: number,
  signal?: AbortSignal
): Promise<Gathered> {
  const gathered = emptyAt(after)
  for await (const batch of source.batches(after, { live: false, signal })) {
    addBatch(gathered, batch)
    if (gathered.closed) break
    if (gathered.size >= chunkBytes) return gathered
  }
  gathered.upToDate = true
  return gathered
}

/** The body of what was gathered: a JSON array in JSON mode, else the bytes. */
export function bodyOf(source: DurableSource, gathered: Gathered): string | Uint8Array {
  if (source.json)
    return `[${gathered.messages.map((message) => JSON.stringify(message)).join(',')}]`
  return new Uint8Array(Buffer.concat(gathered.bytes))
}

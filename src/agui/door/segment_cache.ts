import type { StreamState } from '../../store/rows.js'
import { DEFAULTS } from '../../defaults.js'

/** Where an AG-UI run's segment ends, as the door serves it. */
export interface SegmentBounds {
  /**
   * The seq of the end marker that ends the AG-UI run: the segment's own end, or, when its park
   * was cancelled, the end marker after the cancellation's frames. `null` while it is written.
   */
  end: number | null
  /**
   * Set when the park was cancelled: the segment's own end marker (where it parked). The run is
   * served through it, on to the cancellation, instead of ending on an interrupt nobody can
   * answer any more.
   */
  parkedAt?: number
}

export type { StreamState } from '../../store/rows.js'

/**
 * Where segments end, as this replica learnt it (facts that cannot change), so a re-attach asks the
 * database only for what can (per replica, in memory, bounded: the least recently used go):
 *
 * - where a segment ended (`segmentEnd(stream, afterSeq)` once it is not `null`: rows are never
 *   rewritten and seqs only grow, so the first end after `afterSeq` stays the first);
 * - the bounds of an AG-UI run as of a stream revision: every write bumps the stream's `rev`
 *   (appends to an ended stream, a cancellation's frames and a reopening included), so bounds
 *   computed at a `rev` hold while the stream's row still says that `rev`.
 *
 * Keyed by the stream and its incarnation (`createdAt`): a purge ends every use (the stream's
 * row is gone: the door answers 404 before it asks), a stream opened again is a new key.
 */
export class SegmentCache {
  #ends = new Map<string, number>()
  #bounds = new Map<string, { rev: number; bounds: SegmentBounds }>()

  constructor(readonly size: number = DEFAULTS.segmentCache) {}

  static #key(streamRunId: string, stream: StreamState, afterSeq: number) {
    return `${streamRunId}\n${stream.createdAt}\n${afterSeq}`
  }

  /** The end of the segment after `afterSeq` when known, else `undefined`. */
  segmentEnd(streamRunId: string, stream: StreamState, afterSeq: number) {
    return touch(this.#ends, SegmentCache.#key(streamRunId, stream, afterSeq))
  }

  /** Keep where the segment after `afterSeq` ended (a stored end marker: it never moves). */
  keepSegmentEnd(streamRunId: string, stream: StreamState, afterSeq: number, end: number) {
    keep(this.#ends, SegmentCache.#key(streamRunId, stream, afterSeq), end, this.size)
  }

  /** Bounds computed when the stream's row said `stream.rev`, if it still says so. */
  bounds(streamRunId: string, stream: StreamState, afterSeq: number) {
    const found = touch(this.#bounds, SegmentCache.#key(streamRunId, stream, afterSeq))
    return found?.rev === stream.rev ? found.bounds : undefined
  }

  /** Keep bounds computed after reading the stream's row at `stream.rev`. */
  keepBounds(streamRunId: string, stream: StreamState, afterSeq: number, bounds: SegmentBounds) {
    const key = SegmentCache.#key(streamRunId, stream, afterSeq)
    keep(this.#bounds, key, { rev: stream.rev, bounds }, this.size)
  }
}

/** A value, moved to the most recently used end. */
function touch<T>(map: Map<string, T>, key: string): T | undefined {
  const value = map.get(key)
  if (value !== undefined) {
    map.delete(key)
    map.set(key, value)
  }
  return value
}

function keep<T>(map: Map<string, T>, key: string, value: T, size: number) {
  map.delete(key)
  map.set(key, value)
  if (map.size > size) map.delete(map.keys().next().value!)
}

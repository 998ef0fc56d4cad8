import { nowMs } from '../store/sql.js'
import type { Tail } from '../follow/tail.js'
import type { StreamStore } from '../store/stream_store.js'
import { DEFAULTS } from '../defaults.js'

/** What a purge removes (see `LucidTokenStreamSink.purge`). */
export interface PurgeOptions {
  /** Streams ended (or failed) longer ago than this go. Default: the sink's `ttlMs`. */
  olderThanMs?: number
  /** Count what would go, delete nothing. */
  dryRun?: boolean
  /** Streams per transaction. Default `DEFAULTS.purgeBatch`. */
  batchSize?: number
  /** Stop after the batch in flight (a shutdown): what went stays gone, the rest is the next run's. */
  signal?: AbortSignal
}

/**
 * Delete streams that ended (or failed) more than `olderThanMs` (else `ttlMs`) ago, with
 * everything they owned: frames, stored translator checkpoints, parks (the sub-agents' too),
 * approvals, question sets and the doors' run rows (`store/purge_rows.ts`). In batches: at most
 * `batchSize` streams per transaction (default `DEFAULTS.purgeBatch`), a handful of statements
 * each, so no table is held for long. Then rows such a stream owned that outlived it (an earlier
 * release's purge, a close), created before the cutoff and at least `DEFAULTS.orphanGraceMs`
 * ago, and checkpoints left without their stream. Open streams, and the stream of a parked run,
 * are never purged. Readers still attached to a purged stream end (`tail`).
 *
 * @returns the number of streams removed (with `dryRun`: that would be, nothing deleted)
 */
export async function purgeEnded(
  store: StreamStore,
  tail: Tail,
  ttlMs: number,
  options: PurgeOptions = {}
): Promise<number> {
  const now = nowMs()
  const endedBefore = now - (options.olderThanMs ?? ttlMs)
  const size = Math.max(1, Math.floor(options.batchSize ?? DEFAULTS.purgeBatch))
  // Durable Streams past their expiry end now, so this purge (or a later one) removes them.
  if (!options.dryRun) await store.settleDurable(now)
  // A count, not the ids: a dry run over 100k due streams holds none of them in memory.
  if (options.dryRun) {
    const { due } = await store.purgeableCount(endedBefore)
    return due
  }
  let removed = 0
  // One walk along `ended_at`: each batch starts where the last one stopped.
  const walk = store.purgeWalk(endedBefore, size)
  while (!options.signal?.aborted) {
    const batch = await walk.next()
    if (!batch) break
    const { deleted, kept } = await store.purge(
      batch.map((candidate) => candidate.runId),
      endedBefore
    )
    removed += deleted
    walk.settled(kept)
  }
  if (options.signal?.aborted) {
    if (removed > 0 && tail.followed > 0) await tail.poll()
    return removed
  }
  await store.removeOrphanRows(Math.min(endedBefore, now - DEFAULTS.orphanGraceMs), size)
  // Checkpoints a write stored while their stream was being removed (never served).
  await store.removeOrphanCheckpoints(size)
  // The metadata of Durable Streams the purge removed.
  await store.removeDurableOrphans()
  if (removed > 0 && tail.followed > 0) await tail.poll()
  return removed
}

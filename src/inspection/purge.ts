import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { PurgeScheduleStatus } from '../sink/purge_schedule.js'
import { countPurgeable } from '../store/purge_rows.js'
import { nowMs } from '../store/sql.js'

/** The purge as `agent-stream:inspect --purge` shows it. */
export interface InspectedPurge {
  /** The TTL: streams ended longer ago than this are due. */
  ttlMs: number
  /** Streams a purge would remove now, and the oldest one's end (epoch ms; null: none). */
  due: number
  oldestDueEndedAt: number | null
  /**
   * The background purge of THIS process (config `purge`): `configured: false` without one;
   * `status` is null where it does not run (an ace command: it runs in the web processes).
   */
  schedule: {
    configured: boolean
    everyMs: number | null
    batchSize: number | null
    status: PurgeScheduleStatus | null
  }
}

/**
 * What is due (read from the database, the same rule as the purge: any process sees it) and the
 * schedule's config and, where it runs, its last run, streams purged, duration and next due.
 */
export async function inspectPurge(
  sink: LucidTokenStreamSink,
  schedule: {
    options?: { everyMs: number; batchSize?: number }
    status?: PurgeScheduleStatus | null
  }
): Promise<InspectedPurge> {
  const ttlMs = sink.options.ttlMs
  const { due, oldestEndedAt } = await countPurgeable(
    sinkInternals(sink).client,
    sink.tables,
    nowMs() - ttlMs
  )
  return {
    ttlMs,
    due,
    oldestDueEndedAt: oldestEndedAt,
    schedule: {
      configured: schedule.options !== undefined,
      everyMs: schedule.options?.everyMs ?? null,
      batchSize: schedule.options?.batchSize ?? null,
      status: schedule.status ?? null,
    },
  }
}

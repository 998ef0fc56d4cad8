import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { PurgeScheduleStatus } from '../sink/purge_schedule.js'
import { countPurgeable } from '../store/purge_rows.js'
import { PurgeRuns, type StoredPurgeRun } from '../store/purge_runs.js'
import { nowMs } from '../store/sql.js'

/** The purge as `agent-stream:inspect --purge` shows it. */
export interface InspectedPurge {
  /** The TTL: streams ended longer ago than this are due. */
  ttlMs: number
  /** Streams a purge would remove now, and the oldest one's end (epoch ms; null: none). */
  due: number
  oldestDueEndedAt: number | null
  /**
   * The last purge run by hand (`agent-stream:purge`, `agentStream.purge()`; never a dry run)
   * as stored, from any process; null before the first, or without the table.
   */
  lastManualRun: StoredPurgeRun | null
  /**
   * The background purge (config `purge`): `configured: false` without one. `lastRun`: the last
   * run any process stored (the database's `purgeRuns` row: an ace command sees the web
   * processes' run), null before the first or without the table. `status`: THIS process's
   * schedule, null where it does not run (an ace command: it runs in the web processes).
   */
  schedule: {
    configured: boolean
    everyMs: number | null
    batchSize: number | null
    lastRun: StoredPurgeRun | null
    status: PurgeScheduleStatus | null
  }
}

/**
 * What is due (read from the database, the same rule as the purge: any process sees it), the
 * schedule's config, its last run and the last purge run by hand as stored (any process sees
 * them too), and, where it runs,
 * this process's schedule: its last run, streams purged, duration and next due.
 */
export async function inspectPurge(
  sink: LucidTokenStreamSink,
  schedule: {
    options?: { everyMs: number; batchSize?: number }
    status?: PurgeScheduleStatus | null
  }
): Promise<InspectedPurge> {
  const ttlMs = sink.options.ttlMs
  const client = sinkInternals(sink).client
  const { due, oldestEndedAt } = await countPurgeable(client, sink.tables, nowMs() - ttlMs)
  const [lastRun, lastManualRun] = await Promise.all([
    new PurgeRuns(() => client, sink.tables, 'schedule').last(),
    new PurgeRuns(() => client, sink.tables, 'manual').last(),
  ])
  return {
    ttlMs,
    due,
    oldestDueEndedAt: oldestEndedAt,
    lastManualRun,
    schedule: {
      configured: schedule.options !== undefined,
      everyMs: schedule.options?.everyMs ?? null,
      batchSize: schedule.options?.batchSize ?? null,
      lastRun,
      status: schedule.status ?? null,
    },
  }
}

import type { StoredPurgeRun } from '../store/purge_runs.js'
import { nowMs } from '../store/clock.js'

/**
 * Where a purge's runs are stored, so every process sees the last one (`PurgeRuns`, the
 * `purgeRuns` table): told when a run starts and when it ends.
 */
export interface PurgeRunRecord {
  started(startedAt: number): Promise<void>
  ended(run: StoredPurgeRun): Promise<void>
}

/** A purge's failure as stored and shown: `code: message`. */
export function purgeError(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return `${String(code ?? 'error')}: ${String(message ?? error)}`
}

/**
 * Run `purge` with its start and its end (streams purged, or its error) stored through `record`,
 * in database time (`store/clock.ts`, as every time column: any process reads it). A record that
 * fails goes to `onError` and never stops the purge; the purge's own error is stored, then
 * thrown.
 */
export async function recordedPurge(
  purge: () => Promise<number>,
  record: PurgeRunRecord | undefined,
  onError: (error: unknown) => void
): Promise<number> {
  const store = async (write: (record: PurgeRunRecord) => Promise<void>) => {
    if (!record) return
    try {
      await write(record)
    } catch (error) {
      onError(error)
    }
  }
  const startedAt = nowMs()
  await store((runs) => runs.started(startedAt))
  let purged: number | null = null
  let failure: string | null = null
  try {
    purged = await purge()
    return purged
  } catch (error) {
    failure = purgeError(error)
    throw error
  } finally {
    await store((runs) => runs.ended({ startedAt, endedAt: nowMs(), purged, error: failure }))
  }
}

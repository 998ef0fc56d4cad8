import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { isRunId, RUN_ID } from '../core/frames.js'
import { inTransaction } from './sql.js'
import { recordCommitted } from '../telemetry/metrics/index.js'

/** One stream's wake-up: its run id, and its revision after the commit when known. */
export type WakeUp = [runId: string, rev?: number]

/**
 * The longest wake-up payload: a run id (191), a space and a revision of 15 digits. Anything
 * longer on a channel is not a wake-up (and is not even split).
 */
const MAX_PAYLOAD = 191 + 1 + 15
const PAYLOAD = new RegExp(`^(${RUN_ID.source.slice(1, -1)})(?: (0|[1-9][0-9]{0,14}))?$`)

/** Whether `rev` can be a stream's revision: a non-negative safe integer. */
export const isRev = (rev: unknown): rev is number =>
  typeof rev === 'number' && Number.isSafeInteger(rev) && rev >= 0

/**
 * THE wake-up payload, as NOTIFY and Redis carry it: `<runId>` or `<runId> <rev>` (ids only,
 * never data; far below PostgreSQL's 8000-byte limit).
 */
export function wakeUpPayload(runId: string, rev?: number): string {
  return rev === undefined ? runId : `${runId} ${rev}`
}

/**
 * Read a payload heard on a channel: the wake-up it names, or `null` for anything outside the
 * grammar of {@link wakeUpPayload} (ignored). What it says is a hint and nothing more: whoever
 * can publish on the channel can make a replica read a stream, never skip or slow one (the
 * tail's revisions come from what it read, see `Tail.wake`).
 */
export function parseWakeUp(payload: unknown): WakeUp | null {
  if (typeof payload !== 'string' || payload.length > MAX_PAYLOAD) return null
  const match = PAYLOAD.exec(payload)
  if (!match || !isRunId(match[1])) return null
  return match[2] === undefined ? [match[1]] : [match[1], Number(match[2])]
}

/** How a store's commits wake the other replicas' tails. */
export interface WakeUps {
  /** PostgreSQL NOTIFY channel, the wake-up riding in the transaction; `null` for none. */
  channel: string | null
  /**
   * Told after each committed transaction that changed a stream, with the run id and the
   * stream's revision when known: for wake-ups that cannot ride in the transaction (Redis).
   * Never called for a rollback. Must not throw.
   */
  committed?: (runId: string, rev?: number) => void
}

/**
 * Work done in a {@link notifiedTransaction}: `notify` wakes one stream's readers, `notifyAll`
 * several (in one statement).
 */
export type NotifiedWork<T> = (
  trx: TransactionClientContract,
  notify: (runId: string, rev?: number) => Promise<void>,
  notifyAll: (commits: WakeUp[]) => Promise<void>
) => Promise<T>

/**
 * Run `work` in a transaction on `client` that wakes other replicas for the streams it changed:
 * `work` calls `notify(runId, rev?)` for one stream or `notifyAll(wakeUps)` for several (a
 * group commit's, in one statement). The payload is {@link wakeUpPayload}'s. The rev lets a replica that already
 * has this commit (its own writer handed it over) skip the read. PostgreSQL NOTIFY rides in the
 * transaction (delivered on commit); `wakeUps.committed` is told once the commit succeeded.
 */
export async function notifiedTransaction<T>(
  client: QueryClientContract,
  wakeUps: WakeUps,
  work: NotifiedWork<T>
): Promise<T> {
  const { channel, committed } = wakeUps
  const notified: WakeUp[] = []
  // inTransaction checks the COMMIT's own outcome: a COMMIT that failed (outcome unknown)
  // throws here, so nothing is published for it (the writer's token-checked retry is).
  const result = await inTransaction(client, (trx) => {
    const notifyAll = async (commits: WakeUp[]) => {
      if (channel && commits.length > 0) {
        const calls = commits.map(() => 'pg_notify(?, ?)').join(', ')
        const bindings = commits.flatMap(([runId, rev]) => [channel, wakeUpPayload(runId, rev)])
        await trx.rawQuery(`select ${calls}`, bindings)
      }
      notified.push(...commits)
    }
    return work(trx, (runId: string, rev?: number) => notifyAll([[runId, rev]]), notifyAll)
  })
  for (const [runId, rev] of notified) {
    // The rows are committed: a failing wake-up must never make the write look failed (a
    // retry would duplicate it). The heads poll covers a lost wake-up.
    recordCommitted(runId, rev)
    try {
      committed?.(runId, rev)
    } catch {}
  }
  return result
}

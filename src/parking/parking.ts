import type { ParkingDecisions } from './decisions.js'
import type { ParkingQueries } from './queries.js'
import type { ParkingQueue } from './queue.js'
import type { ParkingSweeper } from './sweeper.js'
import type { ReadyNotices } from './ready.js'

/**
 * Parking as the doors, the HTTP routes, the admin page and the app use it (`createRuntime()`'s
 * and `AgentStream`'s `parking`): deciding, reading, the operator's queue, the sweeper, and the
 * ready notices the run driver listens to. Built by the composition root over the parking store.
 */
export interface Parking {
  /** Approve, reject, answer, expire, cancel: each item decided once. */
  decisions: ParkingDecisions
  /** Items by id, a stream's pending items and snapshot, listings for a person. */
  queries: ParkingQueries
  /** The operator's queue and history: keyset pages, counts, the live fingerprint. */
  queue: ParkingQueue
  /** Expiry, orphaned suspensions and ready segments, on a timer. */
  sweeper: ParkingSweeper
  /**
   * Suspensions left with nothing pending (by a decision, an expiry, or the sweeper): `on`
   * adds a listener (the run driver's, wired by `createRuntime`). Decisions await the
   * listeners, so they resolve after the resume was claimed.
   */
  ready: ReadyNotices
}

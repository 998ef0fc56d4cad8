import type { ParkingTables } from './store_rows.js'
import type { SuspensionParks } from './store_parks.js'
import type { ItemSettling } from './store_settling.js'
import type { SuspensionClaims } from './store_claims.js'
import type { ParkingReads } from './store_reads.js'

export type { ItemKind, ItemRow, ClaimedSuspension } from './store_rows.js'
export type { ParkFrame } from './store_parks.js'
export type { ItemOutcome } from './store_settling.js'
export type { SuspensionRow } from './store_reads.js'

/**
 * The SQL side of parking, through Lucid: its parts, built once by the composition root
 * (`createRuntime`), each consumer taking the parts it uses. Writes that touch a stream run
 * inside that stream's commit (its row lock serializes them), so a park, a decision and the
 * frames they write commit together or not at all. What people read is not here: see
 * `queries.ts` and `queue.ts`.
 */
export interface ParkingStore {
  /** The parking tables on one lazily opened client, which every part shares. */
  rows: ParkingTables
  /** Parking a frame (the sink's park hook) and a suspension's life before a decision. */
  parks: SuspensionParks
  /** Settling one item, or cancelling a segment, inside the stream commit. */
  settling: ItemSettling
  /** Claiming a ready segment for resuming (one replica wins), and giving a claim back. */
  claims: SuspensionClaims
  /** Suspensions and a segment's items, lapsed items: the decisions' and the sweeper's reads. */
  reads: ParkingReads
}

import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from '../store/schema.js'
import { ParkingTables } from './store_rows.js'
import { SuspensionParks } from './store_parks.js'
import { ItemSettling } from './store_settling.js'
import { SuspensionClaims } from './store_claims.js'
import { ParkingReads } from './store_reads.js'
import { QueueReads } from './store_queue.js'

export type { ItemKind, ItemRow, ClaimedSuspension } from './store_rows.js'
export type { ParkFrame } from './store_parks.js'
export type { ItemOutcome } from './store_settling.js'
export type { ListFilter, SuspensionRow } from './store_reads.js'
export type { QueueFilter, QueueKey, QueueCounts, QueueWatermark } from './store_queue.js'

type Parks = SuspensionParks
type Settling = ItemSettling
type Claims = SuspensionClaims
type Reads = ParkingReads
type Queue = QueueReads

/**
 * The SQL side of parking, through Lucid: one face over its parts (parking a frame and the
 * suspension's life, `store_parks.ts`; settling and cancelling, `store_settling.ts`; claims,
 * `store_claims.ts`; reads and listings, `store_reads.ts`). Writes that touch a stream run inside
 * that stream's commit (its row lock serializes them), so a park, a decision and the frames they
 * write commit together or not at all. Each method is its part's (see there for shapes and
 * errors); they are instance methods so a test may wrap one.
 */
export class ParkingStore {
  readonly #rows: ParkingTables
  readonly #parks: Parks
  readonly #settling: Settling
  readonly #claims: Claims
  readonly #reads: Reads
  readonly #queue: Queue

  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {
    this.#rows = new ParkingTables(connect, tables)
    this.#parks = new SuspensionParks(this.#rows)
    this.#settling = new ItemSettling(this.#rows)
    this.#claims = new SuspensionClaims(this.#rows, this.#settling)
    this.#reads = new ParkingReads(this.#rows)
    this.#queue = new QueueReads(this.#rows)
  }

  /** The Lucid client, opened on first use. */
  get client(): QueryClientContract {
    return this.#rows.client
  }

  // Parking a frame, and the suspension's life before a decision.

  /** Insert a parked item (and its suspension) inside the frame's stream commit. */
  park(...args: Parameters<Parks['park']>) {
    return this.#parks.park(...args)
  }
  /** Whether the stream has `open` suspensions. */
  hasOpen(...args: Parameters<Parks['hasOpen']>) {
    return this.#parks.hasOpen(...args)
  }
  /** Store the checkpoint on the stream's open suspensions; returns those parked. */
  parked(...args: Parameters<Parks['parked']>) {
    return this.#parks.parked(...args)
  }
  /** Abandon the stream's open suspensions and cancel their items. */
  abandon(...args: Parameters<Parks['abandon']>) {
    return this.#parks.abandon(...args)
  }
  /** Abandon open suspensions whose stream is no longer open; returns how many streams. */
  abandonOrphans(...args: Parameters<Parks['abandonOrphans']>) {
    return this.#parks.abandonOrphans(...args)
  }

  // Settling and cancelling.

  /** Settle one pending item inside the stream commit; returns whether this call won. */
  settle(...args: Parameters<Settling['settle']>) {
    return this.#settling.settle(...args)
  }
  /** Pending items of one park. */
  pendingCount(...args: Parameters<Settling['pendingCount']>) {
    return this.#settling.pendingCount(...args)
  }
  /** Pending items of a stream (of the segment it parked on). */
  pendingInStream(...args: Parameters<Settling['pendingInStream']>) {
    return this.#settling.pendingInStream(...args)
  }
  /** Cancel the segment a stream parked on, and its pending items; false when the cancel lost. */
  cancel(...args: Parameters<Settling['cancel']>) {
    return this.#settling.cancel(...args)
  }

  // Claims.

  /** Claim a ready segment for resuming (exactly one replica wins); null if not claimable. */
  claim(...args: Parameters<Claims['claim']>) {
    return this.#claims.claim(...args)
  }
  /** The claimer started the resume; returns whether its claim still held. */
  markResumed(...args: Parameters<Claims['markResumed']>) {
    return this.#claims.markResumed(...args)
  }
  /** Give this replica's claim back (it is draining): claimable again at once. */
  releaseClaim(...args: Parameters<Claims['release']>) {
    return this.#claims.release(...args)
  }
  /** Suspensions that may be claimable, oldest first. */
  claimCandidates(...args: Parameters<Claims['claimCandidates']>) {
    return this.#claims.claimCandidates(...args)
  }

  // Reads.

  /** An item's row at `park`, or its newest park; null when there is none. */
  findItem(...args: Parameters<Reads['findItem']>) {
    return this.#reads.findItem(...args)
  }
  /** Every park's row of an item id, oldest park first. */
  findItems(...args: Parameters<Reads['findItems']>) {
    return this.#reads.findItems(...args)
  }
  /** A suspension's status, or null. */
  suspensionStatus(...args: Parameters<Reads['suspensionStatus']>) {
    return this.#reads.suspensionStatus(...args)
  }
  /** The newest parked suspension inside a stream. */
  parkedInStream(...args: Parameters<Reads['parkedInStream']>) {
    return this.#reads.parkedInStream(...args)
  }
  /** The newest suspension inside a stream, whatever its status. */
  newestInStream(...args: Parameters<Reads['newestInStream']>) {
    return this.#reads.newestInStream(...args)
  }
  /** The stream's row and what follows a segment end, in one snapshot. */
  streamAfter(...args: Parameters<Reads['streamAfter']>) {
    return this.#reads.streamAfter(...args)
  }
  /** The run's newest suspension, whatever its status. */
  latestSuspension(...args: Parameters<Reads['latestSuspension']>) {
    return this.#reads.latestSuspension(...args)
  }
  /** The suspensions of a stream's current segment (open, parked or claimed). */
  liveInStream(...args: Parameters<Reads['liveInStream']>) {
    return this.#reads.liveInStream(...args)
  }
  /** Every item of a stream's current segment, whatever its status, in stream order. */
  segmentItems(...args: Parameters<Reads['segmentItems']>) {
    return this.#reads.segmentItems(...args)
  }
  /** Every pending item of a stream, in stream order: not a page. */
  pendingItems(...args: Parameters<Reads['pendingItems']>) {
    return this.#reads.pendingItems(...args)
  }
  /** Pending items past their expiry. */
  lapsed(...args: Parameters<Reads['lapsed']>) {
    return this.#reads.lapsed(...args)
  }
  /** Items for a person, newest first, paged. */
  list(...args: Parameters<Reads['list']>) {
    return this.#reads.list(...args)
  }

  // The operator's queue and history.

  /** One keyset page of the queue or the history. */
  queuePage(...args: Parameters<Queue['page']>) {
    return this.#queue.page(...args)
  }
  /** One item as a person sees it, any status; null when there is none. */
  listedItem(...args: Parameters<Queue['one']>) {
    return this.#queue.one(...args)
  }
  /** Counts per filter value of the queue or the history. */
  queueCounts(...args: Parameters<Queue['counts']>) {
    return this.#queue.counts(...args)
  }
  /** The queue's fingerprint (changes with every park and decision). */
  queueWatermark(...args: Parameters<Queue['watermark']>) {
    return this.#queue.watermark(...args)
  }
}

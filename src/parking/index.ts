import type { Database } from '@adonisjs/lucid/database'
import { LucidTokenStreamSink, type LucidSinkOptions } from '../sink/lucid_sink.js'
import { RunDriver } from '../runner/driver.js'
import type { AgentRunner } from '../runner/contract.js'
import { ParkingStore } from './parking_store.js'
import { ParkingService } from './service.js'
import type { ApproverPolicy } from './types.js'

export interface ParkingOptions extends LucidSinkOptions {
  /** The host's agent. */
  runner: AgentRunner
  /** Who may decide; default: the requester, or a role the decider has. */
  approverPolicy?: ApproverPolicy
  /** This replica's name in claims. */
  replicaId?: string
  /** A claimed suspension not started within this long is claimable again. Default 30000 ms. */
  claimLeaseMs?: number
}

/**
 * Wire the sink, the parking store, the run driver and the decision service on one Lucid
 * connection: approvals and elicitations written through the sink park in the frame's
 * transaction.
 */
export function createParking(db: Database, options: ParkingOptions) {
  let parking: ParkingStore | null = null
  const sink = new LucidTokenStreamSink(db, {
    ...options,
    park: (trx, meta, frame, seq) => parking!.park(trx, meta, frame, seq),
  })
  parking = new ParkingStore(() => sink.client, sink.tables)
  const driver = new RunDriver(sink, parking, options.runner, {
    replicaId: options.replicaId,
    claimLeaseMs: options.claimLeaseMs,
    onError: options.onError,
  })
  const service = new ParkingService(sink, parking, driver, options.approverPolicy, {
    claimLeaseMs: options.claimLeaseMs,
    onError: options.onError,
  })
  return { sink, parking, driver, service }
}

export { ParkingService, defaultApproverPolicy } from './service.js'
export type { Decider } from './service.js'
export { ParkingStore } from './parking_store.js'
export type * from './types.js'

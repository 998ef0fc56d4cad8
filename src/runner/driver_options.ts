import type { RunMeta } from '../core/run.js'
import type { TraceOptions } from '../telemetry/traces/index.js'
import type { HistoryBounds } from './conversation.js'

/** Options of the run driver (`RunDriver`), as `createRuntime()` gives them. */
export interface DriverOptions {
  /** This replica's name in claims (default: a random id per process). */
  replicaId?: string
  /** A claimed suspension not started within this long is claimable again. Default 30000. */
  claimLeaseMs?: number
  /** Told about failures the driver could not write into a stream. */
  onError?: (error: unknown) => void
  /** How much of a thread's earlier turns `RunContext.conversation()` gives (`history`). */
  history?: HistoryBounds
  /**
   * After a stop aborted a segment's `signal`, how long its runner may take to return before
   * the segment ends `cancelled` without it. Default 2000.
   */
  stopGraceMs?: number
  /** Told once a segment ended its stream here (not parked): the thread's queue may go on. */
  onStreamEnd?: (meta: RunMeta) => Promise<unknown>
  /** The run's spans (config `telemetry`): the agent's name, `enduser.id` opt-in. */
  telemetry?: TraceOptions
}

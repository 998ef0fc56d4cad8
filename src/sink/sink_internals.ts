import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { Tail } from '../follow/tail.js'
import type { StreamReads } from '../store/stream_reads.js'
import type { StreamStore } from '../store/stream_store.js'
import type { ClockWatch } from './clock_watch.js'
import type { StopWatch } from './stop_watch.js'
import type { LifecycleRecorder } from '../core/lifecycle.js'

/**
 * What the package's own layers (parking, the doors, the runner, the admin console, the
 * commands) and its tests reach of a sink besides its public face, through
 * `sinkInternals` (`lucid_sink.ts`). Not part of the package's public face: `index.ts` never exports it.
 */
export interface SinkInternals {
  /** The writes of streams (and the connection). */
  readonly store: StreamStore
  /** The reads of streams. */
  readonly reads: StreamReads
  /** This replica's tail reader (feeds, notifiers, `observe`). */
  readonly tail: Tail
  /** The Lucid client the tables live on, opened on first use (parking and door rows share it). */
  readonly client: QueryClientContract
  /** The watch on the database's clock (read before the first write, and at every sweep). */
  readonly clock: ClockWatch
  /** Stops: recorded in the streams row (`StopRequests`), heard by the writer's replica (`StopWatch`). */
  readonly stops: StopWatch
  /** Where lifecycle events are recorded (the webhook outbox; a no-op without webhooks). */
  readonly lifecycle: LifecycleRecorder
}

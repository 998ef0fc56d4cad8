import type { Database } from '@adonisjs/lucid/database'
import { LucidTokenStreamSink, type LucidSinkOptions } from './sink/lucid_sink.js'
import { ParkingStore } from './parking/parking_store.js'
import { ParkingService } from './parking/service.js'
import type { ApproverPolicy } from './parking/types.js'
import { RunDriver } from './runner/driver.js'
import type { AgentRunner } from './runner/contract.js'
import type { HistoryBounds } from './runner/conversation.js'
import { AgUiDoor, AgUiRunStore, type AgUiDoorOptions } from './agui/door/index.js'
import { UiMessageDoor } from './ui_message/door/index.js'

/** Options of {@link createRuntime}: the sink's, plus the runner, parking and the doors'. */
export interface RuntimeOptions extends LucidSinkOptions {
  /** The host's agent. */
  runner: AgentRunner
  /** Who may decide; default: the requester, or a role the decider has. */
  approverPolicy?: ApproverPolicy
  /** This replica's name in claims. */
  replicaId?: string
  /** A claimed suspension not started within this long is claimable again. Default 30000 ms. */
  claimLeaseMs?: number
  /** The AG-UI door's options (`agui` in the config). */
  agui?: AgUiDoorOptions
  /**
   * A graceful shutdown (`drain()`, `close()`): how long runs in flight get to finish before
   * their agent is aborted and their streams end `replica_shutdown`. Default 5000 ms.
   */
  drainMs?: number
  /** How much of a thread's earlier turns a run is given (`history` in the config). */
  history?: HistoryBounds
}

/** The options of {@link createParking} (the same as {@link RuntimeOptions}). */
export type ParkingOptions = RuntimeOptions

/**
 * The composition root: the sink, the parking store, the run driver and the decision service on
 * one Lucid connection. Approvals and elicitations written through the sink park in the frame's
 * transaction; a suspension the service leaves with nothing pending is resumed by the driver,
 * which listens for its ready notices (parking never calls the runner).
 *
 * Returns `{ sink, parking, driver, service, door, uiMessage, drain, close }`: `parking` is the {@link ParkingStore},
 * `service` the {@link ParkingService}, `door` the {@link AgUiDoor} (protocol logic, no HTTP: serve
 * it with the AdonisJS routes or `createAgUiFetchHandler`), `uiMessage` the {@link UiMessageDoor}
 * (the AI SDK UI message stream, for `useChat`), on the same run rows. Nothing here needs AdonisJS's HTTP
 * layer: only a Lucid `Database`.
 *
 * A graceful shutdown (SIGTERM: a deploy) calls `close()`: `drain()` first (both doors answer a
 * new run or a resume with 503 `replica_shutdown` and `Retry-After`, no suspension is claimed
 * here, runs in flight get `drainMs` to finish, then end with an `error` frame `replica_shutdown`
 * at once; parked runs are untouched), then the sink stops (readers end quietly after what is
 * stored, and re-attach from their cursor on another replica).
 */
export function createRuntime(db: Database, options: RuntimeOptions) {
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
    history: options.history,
  })
  const service = new ParkingService(sink, parking, options.approverPolicy, {
    onError: options.onError,
  })
  // Looked up at each notice (not bound once), so a test may replace `driver.tryResume`.
  service.onReady(({ runId, park }) => driver.tryResume(runId, park))
  const runs = new AgUiRunStore(() => sink.client, sink.tables)
  const door = new AgUiDoor({ sink, driver, parking: service, runs }, options.agui)
  // The same projection opt-ins (`agui.reasoning`, `toolErrorText`, `custom`), body cap and
  // checkpoint spacings.
  const { reasoning, toolErrorText, custom, maxBodyBytes, checkpointEvery, storedCheckpointEvery } =
    options.agui ?? {}
  const uiMessage = new UiMessageDoor(
    { sink, driver, parking: service, runs },
    {
      reasoning,
      toolErrorText,
      custom,
      maxBodyBytes,
      checkpointEvery,
      storedCheckpointEvery,
    }
  )
  /** Drain this replica (see above). Resolves once every run in flight wrote its outcome. */
  const drain = () => driver.drain(options.drainMs)
  let closing: Promise<void> | null = null
  /** Drain, then stop the sink's timers, LISTEN connection and readers. Idempotent. */
  const close = () =>
    (closing ??= (async () => {
      await drain()
      await sink.shutdown()
    })())
  return { sink, parking, driver, service, door, uiMessage, drain, close }
}

/** {@link createRuntime} under its former name. */
export const createParking = createRuntime

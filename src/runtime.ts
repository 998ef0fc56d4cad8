import type { Database } from '@adonisjs/lucid/database'
import { LucidTokenStreamSink, sinkInternals, type LucidSinkOptions } from './sink/lucid_sink.js'
import type { ParkingStore } from './parking/parking_store.js'
import type { Parking } from './parking/parking.js'
import { ParkingTables } from './parking/store_rows.js'
import { SuspensionParks } from './parking/store_parks.js'
import { ItemSettling } from './parking/store_settling.js'
import { SuspensionClaims } from './parking/store_claims.js'
import { ParkingReads } from './parking/store_reads.js'
import { ParkingQueries } from './parking/queries.js'
import { ParkingQueue } from './parking/queue.js'
import { ParkingDecisions } from './parking/decisions.js'
import { ParkingSweeper } from './parking/sweeper.js'
import { ReadyNotices } from './parking/ready.js'
import type { ApproverPolicy } from './parking/types.js'
import { RunDriver } from './runner/driver.js'
import { agentNameOf, type TraceOptions } from './telemetry/traces/index.js'
import { context, ROOT_CONTEXT } from '@opentelemetry/api'
import { RunControl } from './runner/run_control.js'
import type { AgentRunner } from './runner/contract.js'
import type { HistoryBounds } from './runner/conversation.js'
import { AgUiDoor, type AgUiDoorOptions } from './agui/door/index.js'
import { DoorRunStore } from './store/door_runs.js'
import { UiMessageDoor, type UiMessageDoorOptions } from './ui_message/door/index.js'
import { RunQueueRows } from './store/run_queue.js'
import { RunQueue } from './runner/run_queue.js'
import { isMultitaskStrategy, MULTITASK_STRATEGIES, readAfterSegmentEnd } from './door/index.js'
import { tableNames } from './store/schema.js'
import { createWebhooks, type WebhooksOptions } from './telemetry/webhooks/index.js'

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
  /** The useChat door's own options (`uiMessage` in the config): its `multitaskStrategy`. */
  uiMessage?: Pick<UiMessageDoorOptions, 'multitaskStrategy'>
  /** Messages one thread's busy-thread queue holds at most (`enqueue`). Default 8. */
  maxQueuedRuns?: number
  /**
   * A graceful shutdown (`drain()`, `close()`): how long runs in flight get to finish before
   * their agent is aborted and their streams end `replica_shutdown`. Default 5000 ms.
   */
  drainMs?: number
  /** How much of a thread's earlier turns a run is given (`history` in the config). */
  history?: HistoryBounds
  /**
   * Run control (`stop` in the config): how long a stopped runner may take to return
   * (`graceMs`, default 2000) and how long a stop request waits for the run's end before it
   * answers `stopping` (`waitMs`, default 5000).
   */
  stop?: { graceMs?: number; waitMs?: number }
  /**
   * Webhooks of the runs' lifecycle (docs/webhooks.md): endpoints, attempts, backoff. Each event
   * is written to the outbox in the transaction of its change; `webhooks.deliverer.start()`
   * delivers (the provider starts it with the sweeper). Off without an endpoint.
   */
  webhooks?: WebhooksOptions
  /** The runs' spans (`telemetry` in the config): `agentName`, the `enduser.id` opt-in. */
  telemetry?: TraceOptions
}

/**
 * The composition root: the sink, the parking store, the run driver, parking (decisions,
 * queries, the queue, the sweeper) and both doors on one Lucid connection. Approvals and
 * elicitations written through the sink park in the frame's transaction; a suspension a decision
 * leaves with nothing pending is resumed by the driver, which listens for its ready notices
 * (parking never calls the runner).
 *
 * Returns `{ sink, parkingStore, driver, parking, control, door, uiMessage, queue, webhooks, drain, close }`:
 * `parkingStore` the {@link ParkingStore} (the SQL parts the sink, the driver and parking share),
 * `parking` the {@link Parking} (`decisions`, `queries`, `queue`, `sweeper`, `ready`: what
 * `AgentStream.parking` is too), `door` the {@link AgUiDoor} (protocol logic, no HTTP: serve
 * it with the AdonisJS routes or `createAgUiFetchHandler`), `uiMessage` the {@link UiMessageDoor}
 * (the AI SDK UI message stream, for `useChat`), on the same run rows; `webhooks` the outbox
 * and its deliverer (`null` without an endpoint; `webhooks.deliverer.start()` delivers, `close()`
 * stops it). Nothing here needs AdonisJS's HTTP
 * layer: only a Lucid `Database`.
 *
 * A graceful shutdown (SIGTERM: a deploy) calls `close()`: `drain()` first (both doors answer a
 * new run or a resume with 503 `replica_shutdown` and `Retry-After`, no suspension is claimed
 * here, runs in flight get `drainMs` to finish, then end with an `error` frame `replica_shutdown`
 * at once; parked runs are untouched), then the sink stops (readers end quietly after what is
 * stored, and re-attach from their cursor on another replica).
 */
export function createRuntime(db: Database, options: RuntimeOptions) {
  checkMultitask(options)
  let parks: SuspensionParks | null = null
  let driver: RunDriver | null = null
  const webhooks = createWebhooks(
    options.webhooks,
    tableNames(options.tables),
    () => sinkInternals(sink).client,
    { holder: options.replicaId, onError: options.onError },
    agentNameOf(options.telemetry, options.runner.name)
  )
  const sink: LucidTokenStreamSink = new LucidTokenStreamSink(db, {
    ...options,
    lifecycle: webhooks?.outbox,
    park: (trx, meta, frame, seq) => parks!.park(trx, meta, frame, seq),
    // A dead writer's segment is continued here when the runner can be (`continue`).
    continueLapsed: (runId) => driver?.continueLapsed(runId) ?? Promise.resolve(false),
  })
  // The client is opened on first use, so the store may be made before the database is ready.
  const rows = new ParkingTables(() => sinkInternals(sink).client, sink.tables)
  parks = new SuspensionParks(rows)
  const settling = new ItemSettling(rows)
  const parkingStore: ParkingStore = {
    rows,
    parks,
    settling,
    claims: new SuspensionClaims(rows, settling),
    reads: new ParkingReads(rows),
  }
  driver = new RunDriver(sink, parkingStore, options.runner, {
    replicaId: options.replicaId,
    claimLeaseMs: options.claimLeaseMs,
    onError: options.onError,
    history: options.history,
    stopGraceMs: options.stop?.graceMs,
    // A queued message's run starts a trace of its own (not a child of the run that ended).
    onStreamEnd: (meta) => context.with(ROOT_CONTEXT, () => queue.startNext(meta.threadId)),
    telemetry: options.telemetry,
  })
  const runs = new DoorRunStore(() => sinkInternals(sink).client, sink.tables)
  const ready = new ReadyNotices()
  const queries = new ParkingQueries(rows)
  const { onError } = options
  const decisions = new ParkingDecisions(
    {
      sink,
      store: parkingStore,
      queries,
      ready,
      onError,
      // A cancelled parked run ended its thread's turn: its queued message starts now, as a
      // trace of its own (not a child of the request that cancelled).
      onCancelled: (streamRunId) =>
        context.with(ROOT_CONTEXT, async () => {
          const run = await runs.find(streamRunId)
          if (run) await queue.startNext(run.threadId)
        }),
    },
    options.approverPolicy
  )
  // A thread is idle once its latest run's stream ended (not talking, parked or about to go on).
  const idleAfter = async (threadId: string) => {
    const latest = await runs.latest(threadId)
    if (!latest) return { after: null }
    const { verdict } = await readAfterSegmentEnd({ parking: { queries } }, latest.streamRunId)
    return verdict === 'over' || verdict === 'cancelled' ? { after: latest.runId } : null
  }
  const queue: RunQueue = new RunQueue({
    sink,
    runs,
    driver,
    rows: new RunQueueRows(() => sinkInternals(sink).client, sink.tables),
    idleAfter,
    maxPerThread: options.maxQueuedRuns,
    claimLeaseMs: options.claimLeaseMs,
    onError,
  })
  const parking: Parking = {
    decisions,
    queries,
    queue: new ParkingQueue(rows),
    sweeper: new ParkingSweeper({
      store: parkingStore,
      decisions,
      ready,
      onError,
      clock: () => sinkInternals(sink).clock.check(),
      lapsed: {
        find: (limit) => sink.lapsedSegments(limit),
        settle: (runId) => sink.settleLapsed(runId),
        graceMs: sink.options.leaseMs,
      },
      queued: (limit) => queue.startIdle(limit),
    }),
    ready,
  }
  // Looked up at each notice (not bound once), so a test may replace `driver.tryResume`.
  ready.on(({ runId, park }) => driver.tryResume(runId, park))
  const control = new RunControl(
    { sink, driver, runs, reads: parkingStore.reads, decisions },
    { waitMs: options.stop?.waitMs }
  )
  const door = new AgUiDoor({ sink, driver, parking, runs, control, queue }, options.agui)
  const uiMessage = new UiMessageDoor(
    { sink, driver, parking, runs, control, queue },
    { ...options.uiMessage, ...sharedDoorOptions(options.agui) }
  )
  /** Drain this replica (see above). Resolves once every run in flight wrote its outcome. */
  const drain = () => driver.drain(options.drainMs)
  let closing: Promise<void> | null = null
  /** Drain, then stop the sink's timers, LISTEN connection and readers. Idempotent. */
  const close = () =>
    (closing ??= (async () => {
      await drain()
      await webhooks?.deliverer.stop()
      await sink.shutdown()
    })())
  return {
    sink,
    parkingStore,
    driver,
    parking,
    control,
    door,
    uiMessage,
    queue,
    webhooks,
    drain,
    close,
  }
}

/** The useChat door's options the `agui` config gives it too: all but its own `multitaskStrategy`. */
type SharedDoorOption = Exclude<keyof UiMessageDoorOptions, 'multitaskStrategy'>

/**
 * The one list of the options both doors take from `agui` (the projection's opt-ins, the body
 * cap, the checkpoint spacings): a `Record` over {@link SharedDoorOption}, so an option added to
 * the useChat door's type is a compile error here until it is listed.
 */
const SHARED_DOOR_OPTIONS: Record<SharedDoorOption, true> = {
  reasoning: true,
  toolErrorText: true,
  custom: true,
  customEvents: true,
  maxBodyBytes: true,
  checkpointEvery: true,
  storedCheckpointEvery: true,
}

/** The {@link SHARED_DOOR_OPTIONS} the app set in `agui`, for the useChat door. */
function sharedDoorOptions(
  agui: AgUiDoorOptions = {}
): Pick<UiMessageDoorOptions, SharedDoorOption> {
  const shared: Partial<Record<SharedDoorOption, unknown>> = {}
  for (const name of Object.keys(SHARED_DOOR_OPTIONS) as SharedDoorOption[]) {
    if (agui[name] !== undefined) shared[name] = agui[name]
  }
  return shared as Pick<UiMessageDoorOptions, SharedDoorOption>
}

/**
 * The busy-thread settings checked before anything is made: each door's `multitaskStrategy` one
 * of the four, `maxQueuedRuns` an integer >= 1. @throws TypeError naming the option
 */
function checkMultitask(options: RuntimeOptions) {
  for (const [name, value] of [
    ['agui.multitaskStrategy', options.agui?.multitaskStrategy],
    ['uiMessage.multitaskStrategy', options.uiMessage?.multitaskStrategy],
  ] as const) {
    if (value !== undefined && !isMultitaskStrategy(value)) {
      throw new TypeError(`"${name}" must be one of ${MULTITASK_STRATEGIES.join(', ')}`)
    }
  }
  const max = options.maxQueuedRuns
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 1)) {
    throw new TypeError('"maxQueuedRuns" must be an integer >= 1')
  }
}

import type { TransactionClientContract } from '@adonisjs/lucid/types/database'

/**
 * A run's lifecycle as events other systems hear of (the webhook outbox): each recorded in the
 * transaction of the change it reports, so it exists exactly when that change committed.
 */
export const LIFECYCLE_EVENTS = [
  'run.started',
  'run.parked',
  'run.decided',
  'run.resumed',
  'run.finished',
  'run.failed',
  'run.cancelled',
  'run.expired',
] as const

/** One of {@link LIFECYCLE_EVENTS}. */
export type LifecycleEventType = (typeof LIFECYCLE_EVENTS)[number]

/** An item of a park, as an event names it (never its input, question text or checkpoint). */
export interface LifecycleItem {
  itemId: string
  kind: 'approval' | 'elicitation'
  /** The tool an approval is for. */
  toolName?: string
  /** Who must decide: `requester` or a role. */
  approver: string
  /** Epoch ms it lapses at, if it does. */
  expiresAt?: number | null
}

/** What an event says of its run: ids, status, and for parks the park's items and decision. */
export interface LifecycleData {
  /** The run the event is about (a sub-agent's own id when it parked). */
  runId: string
  /** The top-level run whose stream it is. */
  streamRunId: string
  /** The thread; looked up from the stream's segment when the producer does not know it. */
  threadId?: string | null
  /** `finished`, `failed`, `cancelled`, `parked`, `running`. */
  status?: string
  /** A failure's stable code (`run_failed`, `replica_shutdown`). */
  code?: string
  park?: number
  items?: LifecycleItem[]
  /** `approved`, `rejected`, `answered`, `expired`. */
  decision?: string
  /** `chat`, `admin`, `api`, `expiry`, `cancel`. */
  via?: string
  /** The decider's principal id (never more of the principal). */
  decidedBy?: string | null
}

/** One lifecycle event. */
export interface LifecycleEvent {
  type: LifecycleEventType
  data: LifecycleData
}

/** Records lifecycle events inside the transaction of the change they report. */
export interface LifecycleRecorder {
  /** Whether any event is recorded at all (none: the producers skip their reads). */
  readonly enabled: boolean
  record(trx: TransactionClientContract, event: LifecycleEvent): Promise<void>
}

/** The recorder of a runtime without webhooks: records nothing. */
export const NO_LIFECYCLE: LifecycleRecorder = {
  enabled: false,
  record: async () => {},
}

/** The ids every event of a run carries, and its status. */
export function lifecycleIds(
  meta: { runId: string; streamRunId: string; threadId?: string | null },
  status?: string
): LifecycleData {
  return {
    runId: meta.runId,
    streamRunId: meta.streamRunId,
    threadId: meta.threadId ?? null,
    ...(status !== undefined ? { status } : {}),
  }
}

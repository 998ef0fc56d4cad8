import type { AgentState } from '../core/agent_state.js'
import type { ElicitationRequest, ToolConfirmation } from '../core/frames.js'
import type { Principal } from '../core/run.js'

/**
 * A parked item's status: `pending` until a person decides it (`approved`, `rejected`, `answered`),
 * its time runs out (`expired`) or its run is cancelled (`cancelled`).
 */
export type ItemStatus = 'pending' | 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled'

/** How a settled item was decided, as `resume` receives it. */
export interface SettledItem {
  kind: 'approval' | 'elicitation'
  /** The item id (the tool-call id of the approval frame, the request's id for a question set). */
  id: string
  /** The run that parked it (a child's own id): several runs may park in one segment. */
  runId: string
  /** Which park of that run. */
  park: number
  status: Exclude<ItemStatus, 'pending'>
  decidedBy: string | null
  decidedVia: string | null
  reason: string | null
  /** Approvals: the arguments to run with (a person's edit replaces the input whole). */
  input?: unknown
  /** Elicitations: every question's values (defaults filled in), and whether it was skipped. */
  answers?: Record<string, string[]>
  skipped?: boolean
}

/**
 * A parked item, whatever its status (pending, decided, expired or cancelled), as a person sees
 * it: ISO times, no checkpoint, no stored principal (its stored row, with the principal, is the
 * store's `ItemRow`).
 */
export interface ParkedItem {
  kind: 'approval' | 'elicitation'
  /** The PARKED run's id (a child's own id), which decisions address. */
  runId: string
  itemId: string
  /** Which park of the run (a reused tool-call id has one row per park); decisions may name it. */
  park: number
  streamRunId: string
  /** Position of the frame that asked, in the stream (doors derive their ids from it). */
  streamSeq: number
  threadId: string
  approver: string
  /** Id of the person the run is for (for display; the policy reads the stored principal). */
  requesterId: string | null
  expiresAt: string | null
  createdAt: string
  status: ItemStatus
  toolName?: string
  input?: unknown
  confirmation?: ToolConfirmation | null
  request?: ElicitationRequest
  decidedBy?: string | null
  decidedVia?: string | null
  reason?: string | null
  /** ISO-8601 instant it was decided (or expired, or cancelled); `null` while pending. */
  decidedAt?: string | null
  /** Approvals: the arguments a person edited before approving (they ran instead of `input`). */
  editedInput?: unknown
}

/** Decides whether `principal` may decide an item. The default: see `defaultApproverPolicy`. */
export type ApproverPolicy = (
  principal: Principal | null,
  item: {
    approver: string
    requester: Principal | null
    kind: 'approval' | 'elicitation'
    runId: string
  }
) => boolean | Promise<boolean>

/**
 * How a batch is decided: `settledFirst` (see {@link ParkingDecisions}); `pageState`,
 * the page's state sent with the decisions (checked by the door), which the resumed segment's
 * runner gets as `ctx.input.state` (`ItemSettling.carryPageState`, in the batch's commit).
 */
export interface BatchOptions {
  settledFirst?: 'skip' | 'refuse'
  pageState?: AgentState
}

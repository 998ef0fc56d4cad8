import {
  DecisionConflictError,
  DecisionLapsedError,
  DecisionMismatchError,
  ParkedItemNotFoundError,
} from '../errors.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { ParkingStore } from './parking_store.js'
import type { ItemRow } from './store_rows.js'
import type { ParkingQueries } from './queries.js'
import type { ReadyNotices } from './ready.js'
import { cancelFrames, deniedCalls, settlementFrames } from './settlement_frames.js'
import { normalizeReply, validateAnswer, validateDecision, validateReply } from './replies.js'
import type { ApproverPolicy } from './types.js'
import type { Principal } from '../core/run.js'
import { defaultApproverPolicy, lapsed, refusal, seesItem, type Decider } from './policy.js'

/** How many times a cancel reads again after a decision changed what it denies. */
const CANCEL_ATTEMPTS = 5

/** What {@link ParkingDecisions} decides with. */
export interface DecisionDeps {
  /** Settlement frames are appended through it, in the decision's transaction. */
  sink: LucidTokenStreamSink
  /** Settling and cancelling (`settling`), the segment's suspensions (`reads`), one client. */
  store: Pick<ParkingStore, 'rows' | 'reads' | 'settling'>
  /** The item a decision names is read through it. */
  queries: ParkingQueries
  /** Told when a decision leaves a segment with nothing pending. */
  ready: ReadyNotices
  /** Background failures (a ready listener's), which never undo a decision. */
  onError?: (error: unknown) => void
}

/**
 * Deciding parked items, once: approve, reject, answer, expire, cancel. Every settlement writes
 * its frames into the stream in the same transaction as the decision (a decision and its frames
 * commit together or not at all); when the last open item of a segment is settled, a ready
 * notice is emitted (`ready.ts`): the run driver listens, and exactly one replica claims the
 * suspension and resumes the run. Errors: `ParkedItemNotFoundError` (404; also to a
 * decider the policy refuses who may not see the item, `policy.ts`), `DecisionForbiddenError`
 * (403, to one who may: their own run, or an admin), `DecisionMismatchError` /
 * `InvalidDecisionError` (422), `DecisionConflictError` (409), `DecisionLapsedError` (410). A refused call changes nothing.
 */
export class ParkingDecisions {
  readonly #sink: LucidTokenStreamSink
  readonly #store: DecisionDeps['store']
  readonly #queries: ParkingQueries
  readonly #ready: ReadyNotices
  readonly #onError: ((error: unknown) => void) | undefined

  constructor(
    deps: DecisionDeps,
    /** Who may decide (config `approverPolicy`); the console tells a refused person which. */
    readonly policy: ApproverPolicy = defaultApproverPolicy
  ) {
    this.#sink = deps.sink
    this.#store = deps.store
    this.#queries = deps.queries
    this.#ready = deps.ready
    this.#onError = deps.onError
  }

  /**
   * Whether `principal` may decide `item` (the approver policy over the item's approver, its
   * requester, kind and run). Never throws for a refusal: resolves false.
   */
  async mayDecide(
    principal: Principal | null,
    item: Pick<ItemRow, 'approver' | 'principal' | 'kind' | 'runId'>
  ): Promise<boolean> {
    return this.policy(principal, {
      approver: item.approver,
      requester: item.principal,
      kind: item.kind,
      runId: item.runId,
    })
  }

  /**
   * Approve a tool call: `{ reason?, input?, park? }`; `input` replaces its arguments whole.
   * `park` (the approval frame's, or `queries.list()`'s) pins one park of the run's item id; without
   * it, an id that several parks of the run used is a conflict (nothing changes).
   */
  async approve(runId: string, itemId: string, decider: Decider, body: unknown = {}) {
    const decision = await validateDecision(body)
    const item = await this.#load(runId, itemId, decider, decision.park)
    if (item.kind === 'elicitation') {
      // The admin inbox is one inbox: approving a question set confirms its defaults.
      if (decider.via !== 'admin') throw new DecisionMismatchError('answers')
      const reply = await validateReply({}, item.request!)
      return this.#settle(item, decider, { status: 'answered', reason: decision.reason, reply })
    }
    return this.#settle(item, decider, {
      status: 'approved',
      reason: decision.reason,
      editedInput: decision.input,
    })
  }

  /** Reject a tool call (nothing runs; the conversation gets `tool-output-denied`). */
  async reject(runId: string, itemId: string, decider: Decider, body: unknown = {}) {
    const decision = await validateDecision(body)
    if (decision.input !== undefined) throw new DecisionMismatchError('a decision')
    const item = await this.#load(runId, itemId, decider, decision.park)
    if (item.kind === 'elicitation') {
      // Rejecting a question set from the admin inbox skips it.
      if (decider.via !== 'admin') throw new DecisionMismatchError('answers')
      return this.#settle(item, decider, {
        status: 'answered',
        reason: decision.reason,
        reply: { answers: {}, skipped: true },
      })
    }
    return this.#settle(item, decider, { status: 'rejected', reason: decision.reason })
  }

  /** Answer a question set: `{ answers: { [questionId]: string[] }, skipped?, park? }`. */
  async answer(runId: string, itemId: string, decider: Decider, body: unknown) {
    // The body's shape first: nothing is looked up for a body that could never be valid.
    const shape = await validateAnswer(body)
    const item = await this.#load(runId, itemId, decider, shape.park)
    if (item.kind !== 'elicitation') throw new DecisionMismatchError('a decision')
    const reply = normalizeReply(shape, item.request!)
    return this.#settle(item, decider, { status: 'answered', reply })
  }

  /**
   * Cancel a parked run: the segment it parked on (every run that parked in it) is never
   * resumed, every pending item is cancelled, each call that will not run now (pending, or
   * approved but not yet resumed) gets `tool-output-denied` (`status: 'cancelled'`) and a
   * `cancelled` event ends the stream. `runId` is a run that
   * parked (a child's own id) or the stream's. A run still writing, or already resuming
   * (nothing pending), is a conflict.
   * @throws ParkedItemNotFoundError, DecisionForbiddenError, DecisionConflictError
   */
  async cancel(runId: string, decider: Decider) {
    // A decision committing between the read and the cancel's commit (its own denial written)
    // changes what the cancel denies: it reads again, a few times, then reports the conflict.
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#cancelOnce(runId, decider)
      if (outcome !== 'changed') return outcome
      if (attempt === CANCEL_ATTEMPTS) throw new DecisionConflictError()
    }
  }

  async #cancelOnce(runId: string, decider: Decider) {
    const own = await this.#store.reads.latestSuspension(runId)
    const streamRunId = own?.streamRunId ?? runId
    const live = await this.#store.reads.liveInStream(streamRunId)
    if (live.length === 0) {
      // Nothing parked: a conflict, told only to whoever may see the run (else the 404 of a
      // missing one: a 409 would say that another person's run exists).
      const newest = own ?? (await this.#queries.newestInStream(streamRunId))
      const parked = newest && (own ?? (await this.#store.reads.latestSuspension(newest.runId)))
      if (parked && seesItem(decider, parked.principal)) throw new DecisionConflictError()
      throw new ParkedItemNotFoundError()
    }
    // All of them, however many (never a page).
    const items = await this.#store.reads.segmentItems(streamRunId)
    const pending = items.filter((item) => item.status === 'pending')
    const may = async (approver: string) =>
      decider.principal !== null &&
      (await this.mayDecide(decider.principal, {
        approver,
        principal: live[0].principal,
        kind: 'approval',
        runId: live[0].runId,
      }))
    // The person the run is for, or anyone who may decide one of its pending items.
    let allowed = await may('requester')
    for (const approver of new Set(pending.map((item) => item.approver))) {
      allowed ||= await may(approver)
    }
    if (!allowed) throw refusal(decider, live[0].principal)
    // Still running (not parked yet), resuming, resumed or cancelled: the cancel lost.
    if (live.some((suspension) => suspension.status !== 'parked')) {
      throw new DecisionConflictError()
    }
    const calls = deniedCalls(items)
    let changed = false
    try {
      await this.#sink.append(streamRunId, {
        frames: cancelFrames(calls),
        evenIfClosed: true,
        within: async (trx) => {
          const won = await this.#store.settling.cancel(
            trx,
            streamRunId,
            decider.principal?.id ?? null,
            calls
          )
          if (won === 'changed') changed = true
          if (won !== true) throw new DecisionConflictError()
        },
      })
    } catch (error) {
      if (changed) return 'changed' as const
      throw error
    }
    return { status: 'cancelled' as const }
  }

  /**
   * Settle one lapsed item as expired (what the sweeper would do), resuming what that unblocks.
   * `park` pins one park of a reused id (see {@link approve}).
   * @throws ParkedItemNotFoundError, DecisionConflictError when it is decided already, or when
   *   several parks used the id and `park` does not say which
   */
  async expire(runId: string, itemId: string, park?: number) {
    const [item] = await this.#pinned(runId, itemId, park)
    return this.expireItem(item)
  }

  /**
   * Settle a stored item row as expired (the sweeper's, for each lapsed item), resuming what that
   * unblocks.
   * @throws DecisionConflictError when it is decided already, DecisionLapsedError when it expired
   */
  expireItem(item: ItemRow) {
    return this.#settle(item, { principal: null, via: 'expiry' }, { status: 'expired' })
  }

  /** The item a decision addresses, if the decider may decide it. See {@link #pinned}. */
  async #load(runId: string, itemId: string, decider: Decider, park?: number): Promise<ItemRow> {
    const rows = await this.#pinned(runId, itemId, park, false)
    if (!(await this.mayDecide(decider.principal, rows[0])))
      throw refusal(decider, rows[0].principal)
    if (rows.length > 1) throw new DecisionConflictError('ambiguous')
    return rows[0]
  }

  /**
   * The rows a decision on `itemId` of `runId` may mean: the one at `park` when it names one;
   * else every park that used the id. A provider that numbers its calls per response reuses an
   * id in every park: a decision that does not name its park is then ambiguous (a replay of an
   * old one would decide the newest call), a conflict. With `unique` (default), that conflict is
   * thrown here; the rows are never empty.
   * @throws ParkedItemNotFoundError, DecisionConflictError
   */
  async #pinned(runId: string, itemId: string, park?: number, unique = true) {
    const rows =
      park === undefined
        ? await this.#queries.findItems(runId, itemId)
        : [await this.#queries.findItem(runId, itemId, park)].filter((row) => row !== null)
    if (rows.length === 0) throw new ParkedItemNotFoundError()
    if (unique && rows.length > 1) throw new DecisionConflictError('ambiguous')
    return rows
  }

  async #settle(
    item: ItemRow,
    decider: Decider,
    outcome: {
      status: 'approved' | 'rejected' | 'answered' | 'expired'
      reason?: string
      editedInput?: unknown
      reply?: { answers: Record<string, string[]>; skipped: boolean }
    }
  ) {
    if (item.status === 'expired') throw new DecisionLapsedError()
    if (item.status !== 'pending') throw new DecisionConflictError()
    if (outcome.status !== 'expired' && lapsed(item)) {
      throw new DecisionLapsedError()
    }
    const via = decider.via ?? 'api'
    const frames = settlementFrames(item, { principal: decider.principal, via }, outcome)
    // Settlement frames obey the same rules and size cap as any other frame (the sink validates).
    await this.#sink.append(item.streamRunId, {
      frames,
      evenIfClosed: true,
      within: async (trx) => {
        const won = await this.#store.settling.settle(trx, item, {
          status: outcome.status,
          decidedBy: decider.principal?.id ?? null,
          decidedVia: via,
          reason: outcome.reason ?? null,
          editedInput: outcome.editedInput,
          reply: outcome.reply,
        })
        if (!won) {
          // Still pending means it lapsed meanwhile; otherwise someone decided first.
          throw lapsed(item) ? new DecisionLapsedError() : new DecisionConflictError()
        }
      },
    })
    try {
      // Ready once nothing of its segment is pending (several runs may have parked in it): a
      // listener (the run driver) claims it. Of two last decisions racing, the later commit sees
      // zero, so at least one emits; the claim rechecks.
      const { rows, settling } = this.#store
      if ((await settling.pendingInStream(rows.client, item.streamRunId)) === 0) {
        await this.#ready.emit({ runId: item.runId, park: item.park })
      }
    } catch (error) {
      // The decision stands; the sweeper claims the suspension later.
      this.#onError?.(error)
    }
    return { status: outcome.status }
  }
}

import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { DecisionConflictError, DecisionLapsedError, InvalidDecisionError } from '../errors.js'
import { cancelOnce } from './cancel.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { ParkingStore } from './parking_store.js'
import type { ItemRow } from './store_rows.js'
import type { ParkingQueries } from './queries.js'
import type { ReadyNotices } from './ready.js'
import type { ApproverPolicy, BatchOptions } from './types.js'
import type { Principal } from '../core/run.js'
import { defaultApproverPolicy, lapsed, type Decider } from './policy.js'
import { traceSettled } from './decision_traces.js'
import {
  checkStep,
  EXPIRY,
  pinnedItems,
  shapeOf,
  type ItemDecision,
  type Step,
  type StepDeps,
} from './decision_steps.js'
import { commitSteps, type CommitDeps } from './decision_commit.js'

export type { ItemDecision }

/** How many times a cancel reads again after a decision changed what it denies. */
const CANCEL_ATTEMPTS = 5

/** How many times a batch that skips items settled first plans again after losing a race. */
const BATCH_ATTEMPTS = 5

/** A batch every decision of which was checked: `commit()` applies them all, or none. */
export interface DecisionPlan {
  readonly steps: readonly Step[]
  commit(): Promise<void>
}

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
  /**
   * Told when a cancel ended a parked run (its stream is over): the thread's queued message
   * starts now (`RunQueue.startNext`), not at the sweeper's next round.
   */
  onCancelled?: (streamRunId: string) => Promise<unknown>
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
  readonly #onCancelled: DecisionDeps['onCancelled']

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
    this.#onCancelled = deps.onCancelled
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
   * Approve a tool call: `{ reason?, input?, park? }`; `input` replaces its arguments whole, and
   * must fit the JSON Schema the `approval` frame declares for the tool's input (`inputSchema`).
   * `park` (the approval frame's, or `queries.list()`'s) pins one park of the run's item id; without
   * it, an id that several parks of the run used is a conflict (nothing changes).
   */
  async approve(runId: string, itemId: string, decider: Decider, body: unknown = {}) {
    return this.#one({ runId, itemId, verb: 'approve', body }, decider)
  }

  /** Reject a tool call (nothing runs; the conversation gets `tool-output-denied`). */
  async reject(runId: string, itemId: string, decider: Decider, body: unknown = {}) {
    return this.#one({ runId, itemId, verb: 'reject', body }, decider)
  }

  /** Answer a question set: `{ answers: { [questionId]: string[] }, skipped?, park? }`. */
  async answer(runId: string, itemId: string, decider: Decider, body: unknown) {
    return this.#one({ runId, itemId, verb: 'answer', body }, decider)
  }

  async #one(decision: ItemDecision, decider: Decider) {
    const plan = await this.plan([decision], decider)
    await plan.commit()
    return { status: plan.steps[0].outcome.status }
  }

  /**
   * Several decisions of one request at once (a door's resume, a chat message answering several
   * asks): every one is checked first (the bodies' shapes before any lookup, then each item:
   * who decides, kind, expiry, the edited input's schema; an item named twice is refused,
   * `distinctItems`), then all are applied in ONE transaction of their stream, or none is.
   * With `settledFirst: 'skip'`, an item someone settled first (decided, expired, cancelled) is
   * left out instead of refused (its outcome is in the stream); a race lost while committing
   * then reads again, a few times. Resolves how many were applied.
   * @throws what {@link approve}, {@link reject}, {@link answer} throw; nothing is applied
   */
  async decideAll(
    decisions: ItemDecision[],
    decider: Decider,
    options: BatchOptions = {}
  ): Promise<{ applied: number }> {
    for (let attempt = 1; ; attempt++) {
      const plan = await this.plan(decisions, decider, options)
      try {
        await plan.commit()
        return { applied: plan.steps.length }
      } catch (error) {
        const lost = error instanceof DecisionConflictError || error instanceof DecisionLapsedError
        if (!lost || options.settledFirst !== 'skip' || attempt === BATCH_ATTEMPTS) throw error
      }
    }
  }

  /**
   * Check every decision of a batch (see {@link decideAll}) and return them, ready to apply:
   * `commit()` settles them all in one transaction, or throws (a race lost: 409, 410) having
   * changed nothing. Nothing is written before `commit()`.
   */
  async plan(
    decisions: ItemDecision[],
    decider: Decider,
    options: BatchOptions = {}
  ): Promise<DecisionPlan> {
    // Every body's shape first: nothing is looked up for a batch one of whose bodies could
    // never be valid.
    const shapes = []
    for (const decision of decisions) shapes.push(await shapeOf(decision))
    const steps: Step[] = []
    const seen = new Set<string>()
    for (const [index, decision] of decisions.entries()) {
      const step = await checkStep(this.#steps, decision, shapes[index], decider)
      const { kind, runId, park, itemId } = step.item
      const key = JSON.stringify([kind, runId, park, itemId])
      if (seen.has(key)) throw new InvalidDecisionError([{ field: '', rule: 'distinctItems' }])
      seen.add(key)
      if (step.item.status !== 'pending' && options.settledFirst === 'skip') continue
      if (step.item.status === 'expired') throw new DecisionLapsedError()
      if (step.item.status !== 'pending') throw new DecisionConflictError()
      if (step.outcome.status !== 'expired' && lapsed(step.item)) throw new DecisionLapsedError()
      steps.push(step)
    }
    const streams = new Set(steps.map((step) => step.item.streamRunId))
    if (streams.size > 1) throw new InvalidDecisionError([{ field: '', rule: 'oneStream' }])
    return { steps, commit: () => commitSteps(this.#commits, steps, options.pageState) }
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
  async cancel(
    runId: string,
    decider: Decider,
    /** More writes committed with the cancel (a stop's mode), in its transaction. */
    within?: (trx: TransactionClientContract) => Promise<void>
  ) {
    // A decision committing between the read and the cancel's commit (its own denial written)
    // changes what the cancel denies: it reads again, a few times, then reports the conflict.
    for (let attempt = 1; ; attempt++) {
      const outcome = await cancelOnce(
        {
          sink: this.#sink,
          store: this.#store,
          queries: this.#queries,
          mayDecide: (principal, item) => this.mayDecide(principal, item),
        },
        runId,
        decider,
        within
      )
      if (outcome !== 'changed') {
        const { streamRunId, ...answer } = outcome
        await traceSettled(this.#store.rows, streamRunId, 'cancelled', this.#onError)
        this.#onCancelled?.(streamRunId).catch((error) => this.#onError?.(error))
        return answer
      }
      if (attempt === CANCEL_ATTEMPTS) throw new DecisionConflictError()
    }
  }

  /**
   * Settle one lapsed item as expired (what the sweeper would do), resuming what that unblocks.
   * `park` pins one park of a reused id (see {@link approve}).
   * @throws ParkedItemNotFoundError, DecisionConflictError when it is decided already, or when
   *   several parks used the id and `park` does not say which
   */
  async expire(runId: string, itemId: string, park?: number) {
    const [item] = await pinnedItems(this.#queries, runId, itemId, park)
    return this.expireItem(item)
  }

  /**
   * Settle a stored item row as expired (the sweeper's, for each lapsed item), resuming what that
   * unblocks.
   * @throws DecisionConflictError when it is decided already, DecisionLapsedError when it expired
   */
  async expireItem(item: ItemRow) {
    if (item.status === 'expired') throw new DecisionLapsedError()
    if (item.status !== 'pending') throw new DecisionConflictError()
    await commitSteps(this.#commits, [{ item, decider: EXPIRY, outcome: { status: 'expired' } }])
    return { status: 'expired' as const }
  }

  /** What checking a decision against its item reads (`decision_steps.ts`). */
  get #steps(): StepDeps {
    return {
      sink: this.#sink,
      queries: this.#queries,
      mayDecide: (principal, item) => this.mayDecide(principal, item),
    }
  }

  /** What applying checked decisions writes through and tells (`decision_commit.ts`). */
  get #commits(): CommitDeps {
    return { sink: this.#sink, store: this.#store, ready: this.#ready, onError: this.#onError }
  }
}

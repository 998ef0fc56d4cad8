import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import {
  DecisionConflictError,
  DecisionLapsedError,
  DecisionMismatchError,
  InvalidDecisionError,
  ParkedItemNotFoundError,
} from '../errors.js'
import { schemaIssue } from '../core/json_schema.js'
import { askedInputSchema } from './asked_schema.js'
import { cancelOnce } from './cancel.js'
import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { decisionEvent } from './lifecycle_events.js'
import type { ParkingStore } from './parking_store.js'
import type { ItemRow } from './store_rows.js'
import type { ParkingQueries } from './queries.js'
import type { ReadyNotices } from './ready.js'
import { settlementFrames, type SettlementOutcome } from './settlement_frames.js'
import {
  normalizeReply,
  validateAnswer,
  validateDecision,
  validateReply,
  type AnswerBody,
} from './replies.js'
import type { ApproverPolicy, BatchOptions } from './types.js'
import type { Principal } from '../core/run.js'
import type { AgentState } from '../core/agent_state.js'
import { defaultApproverPolicy, lapsed, refusal, type Decider } from './policy.js'
import { nowMs } from '../store/clock.js'
import { recordParksSettled } from '../telemetry/metrics/index.js'
import { traceSettled } from './decision_traces.js'

/** How many times a cancel reads again after a decision changed what it denies. */
const CANCEL_ATTEMPTS = 5

/** How many times a batch that skips items settled first plans again after losing a race. */
const BATCH_ATTEMPTS = 5

/** Who settles an item that lapsed. */
const EXPIRY: Decider = { principal: null, via: 'expiry' }

/**
 * One decision of a request: approve, reject or answer an item (`body` as {@link
 * ParkingDecisions.approve} and the others take it), or settle a lapsed one as expired.
 * `park` pins one park of the run's item id (a door always knows it).
 */
export interface ItemDecision {
  runId: string
  itemId: string
  park?: number
  verb: 'approve' | 'reject' | 'answer' | 'expire'
  body?: unknown
}

/** A decision checked against its item, ready to apply. */
interface Step {
  item: ItemRow
  decider: Decider
  outcome: SettlementOutcome & { editedInput?: unknown }
}

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
      const step = await this.#check(decision, shapes[index], decider)
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
    return { steps, commit: () => this.#commit(steps, options.pageState) }
  }

  /** One decision checked against its item: the step that applies it. */
  async #check(decision: ItemDecision, shape: Shape, decider: Decider): Promise<Step> {
    const park = decision.park ?? shape.park
    if (decision.verb === 'expire') {
      const [item] = await this.#pinned(decision.runId, decision.itemId, park)
      return { item, decider: EXPIRY, outcome: { status: 'expired' } }
    }
    const item = await this.#load(decision.runId, decision.itemId, decider, park)
    if (decision.verb === 'answer') {
      if (item.kind !== 'elicitation') throw new DecisionMismatchError('a decision')
      const reply = normalizeReply(shape, item.request!)
      return { item, decider, outcome: { status: 'answered', reply } }
    }
    const reason = shape.reason
    if (item.kind === 'elicitation') {
      // The admin inbox is one inbox: approving a question set confirms its defaults, rejecting
      // it skips it.
      if (decider.via !== 'admin') throw new DecisionMismatchError('answers')
      const reply =
        decision.verb === 'approve'
          ? await validateReply({}, item.request!)
          : { answers: {}, skipped: true }
      return { item, decider, outcome: { status: 'answered', reason, reply } }
    }
    if (decision.verb === 'reject')
      return { item, decider, outcome: { status: 'rejected', reason } }
    if (shape.input !== undefined) {
      // What reaches the tool is what its schema allows, whoever edited it (invariant 13).
      const issue = schemaIssue(await askedInputSchema(this.#sink, item), shape.input, 'input')
      if (issue) throw new InvalidDecisionError([issue])
    }
    return { item, decider, outcome: { status: 'approved', reason, editedInput: shape.input } }
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
    const [item] = await this.#pinned(runId, itemId, park)
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
    await this.#commit([{ item, decider: EXPIRY, outcome: { status: 'expired' } }])
    return { status: 'expired' as const }
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

  /**
   * Settle every step in ONE transaction of their stream, with every settlement's frames (a
   * decision and its frames commit together or not at all; several decisions too). Then, once
   * nothing of the segment is pending, the ready notice.
   */
  async #commit(steps: Step[], pageState?: AgentState) {
    if (steps.length === 0) return
    const frames = steps.flatMap((step) =>
      settlementFrames(
        step.item,
        { principal: step.decider.principal, via: step.decider.via ?? 'api' },
        step.outcome
      )
    )
    const { streamRunId } = steps[0].item
    const lifecycle = sinkInternals(this.#sink).lifecycle
    // Settlement frames obey the same rules and size cap as any other frame (the sink validates).
    await this.#sink.append(streamRunId, {
      frames,
      evenIfClosed: true,
      within: async (trx) => {
        for (const { item, decider, outcome } of steps) {
          const won = await this.#store.settling.settle(trx, item, {
            status: outcome.status,
            decidedBy: decider.principal?.id ?? null,
            decidedVia: decider.via ?? 'api',
            reason: outcome.reason ?? null,
            editedInput: outcome.editedInput,
            reply: outcome.reply,
          })
          // Still pending means it lapsed meanwhile; otherwise someone decided first. Thrown,
          // the whole transaction rolls back: none of the batch is applied.
          if (!won) throw lapsed(item) ? new DecisionLapsedError() : new DecisionConflictError()
          await lifecycle.record(trx, decisionEvent(item, decider, outcome.status))
        }
        if (pageState) await this.#store.settling.carryPageState(trx, streamRunId, pageState)
      },
    })
    recordParksSettled(steps.map(settledPark), nowMs())
    const last = steps[steps.length - 1].item
    try {
      // Ready once nothing of its segment is pending (several runs may have parked in it): a
      // listener (the run driver) claims it. Of two last decisions racing, the later commit sees
      // zero, so at least one emits; the claim rechecks.
      const { rows, settling } = this.#store
      if ((await settling.pendingInStream(rows.client, streamRunId)) === 0) {
        await this.#ready.emit({ runId: last.runId, park: last.park })
      }
    } catch (error) {
      // The decision stands; the sweeper claims the suspension later.
      this.#onError?.(error)
    }
    const settled = steps.map((step) => step.item)
    await traceSettled(this.#store.rows, streamRunId, settled, this.#onError)
  }
}

/** The body of one decision, its shape checked (no lookup yet). */
type Shape = AnswerBody & { reason?: string; input?: unknown }

async function shapeOf(decision: ItemDecision): Promise<Shape> {
  if (decision.verb === 'expire') return {}
  if (decision.verb === 'answer') return validateAnswer(decision.body)
  const shape = await validateDecision(decision.body ?? {})
  if (decision.verb === 'reject' && shape.input !== undefined) {
    throw new DecisionMismatchError('a decision')
  }
  return shape
}

/** What the park duration metric is told of a settled step. */
function settledPark(step: Step) {
  const { item, outcome, decider } = step
  return { askedAt: item.createdAt, decision: outcome.status, via: decider.via ?? 'api' }
}

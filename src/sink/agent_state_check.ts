import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { InvalidFrameError } from '../errors.js'
import { applyStateEvent, isStateFrame, type AgentState } from '../core/agent_state.js'
import type { StreamFrame } from '../core/frames.js'
import type { AppendPlan, CommitResult } from '../store/append_plan.js'
import type { TableNames } from '../store/schema.js'
import { stateRows } from '../store/state_rows.js'

/**
 * The agent's state (`state` event frames) checked on every write path (a writer, `sink.append`,
 * a takeover): a `state` frame is checked when it COMMITS, inside the transaction, once the
 * stream row is locked, against the state the stream's STORED rows leave before it: a delta that
 * does not apply, or a state left over `maxStateBytes`, is refused (`InvalidFrameError`, rules of
 * `src/core/agent_state.ts`) and the whole append rolls back. So whoever wrote before (another
 * writer of the same stream: a delegated child, a reopen, another replica, a takeover; an
 * append), the state checked is the one every reader computes, and a commit applies a frame
 * once: a retried commit that finds its attempt landed checks nothing again; a failed one
 * changed nothing.
 *
 * One writer's instance keeps the state after the rows it knows (`atSeq`): while nobody else
 * wrote, the check reads nothing; else it reads the `state` rows after `atSeq`, a page at a
 * time. Bounded: the state itself (at most `maxStateBytes`) and one page of rows.
 */
export class AgentStateCheck {
  #state: AgentState | null = null
  /** The stream's rows up to this seq leave {@link #state} (0: none, no state). */
  #atSeq = 0

  constructor(
    readonly maxStateBytes: number,
    readonly tables: TableNames
  ) {}

  /**
   * One attempt of an append of `frames`: its `stamp` (the plan's `then`, with the state check
   * of its `state` frames run first, in the transaction; `then` alone when it has none), and
   * `committed`, called with the attempt's result once it committed.
   */
  attempt(
    runId: string,
    frames: StreamFrame[],
    then?: AppendPlan['stamp']
  ): { stamp: AppendPlan['stamp']; committed: (result: CommitResult | null) => void } {
    /** What this attempt's check leaves, adopted once it commits. */
    let left: { state: AgentState | null; atSeq: number } | null = null
    const events = frames.filter(isStateFrame).map((frame) => frame.event)
    const committed = (result: CommitResult | null) => {
      // A landed retry moves nothing: its rows are read when next needed.
      if (!result || result.landed) return
      if (events.length > 0) {
        if (left) {
          this.#state = left.state
          this.#atSeq = left.atSeq
        }
        return
      }
      const last = result.rows.at(-1)?.seq
      if (last !== undefined && result.before === this.#atSeq) this.#atSeq = last
    }
    if (events.length === 0) return { stamp: then, committed }
    const stamp: AppendPlan['stamp'] = async (trx, rows) => {
      // Seqs are allocated from the stream's last one: the first row's is the next.
      const before = rows[0].seq - 1
      let current = this.#state
      if (before !== this.#atSeq) {
        // Someone else wrote (or a stream this instance never saw): read what they stored.
        const known = before > this.#atSeq
        current = await storedAgentState(trx, this.tables, runId, before, {
          state: known ? this.#state : null,
          afterSeq: known ? this.#atSeq : 0,
        })
      }
      for (const event of events) {
        const next = applyStateEvent(current, event, this.maxStateBytes)
        if ('rule' in next) throw new InvalidFrameError([{ field: 'event', rule: next.rule }])
        current = next.state
      }
      left = { state: current, atSeq: rows.at(-1)!.seq }
      await then?.(trx, rows)
    }
    return { stamp, committed }
  }
}

/**
 * A snapshot's own rules (an object, at most `maxStateBytes`, the depth rule), checked as soon
 * as it is written (`checked`: the frame's validation), so its writer hears of a refusal at
 * once, even through an outage; a delta is checked when it commits ({@link AgentStateCheck}).
 *
 * @throws InvalidFrameError (rejects)
 */
export async function snapshotChecked(
  checked: Promise<StreamFrame>,
  maxStateBytes: number
): Promise<StreamFrame> {
  const valid = await checked
  if (isStateFrame(valid) && valid.event.snapshot !== undefined) {
    const next = applyStateEvent(null, valid.event, maxStateBytes)
    if ('rule' in next) throw new InvalidFrameError([{ field: 'event', rule: next.rule }])
  }
  return valid
}

/** Rows of a stream's `state` frames read per page when the agent's state is rebuilt. */
const STATE_PAGE_ROWS = 64

/**
 * The agent state a stream's stored `state` rows leave up to `uptoSeq`, from `from` (the state
 * after `from.afterSeq`), applied in order a page at a time (a stored frame that does not
 * apply, which only a sink before this check could store, is passed over as every reader does).
 */
export async function storedAgentState(
  trx: TransactionClientContract,
  tables: TableNames,
  runId: string,
  uptoSeq: number,
  from: { state: AgentState | null; afterSeq: number }
): Promise<AgentState | null> {
  let state = from.state
  let after = from.afterSeq
  for (;;) {
    const rows = await stateRows(trx, tables, runId, after, uptoSeq, STATE_PAGE_ROWS)
    for (const row of rows) {
      const frame = JSON.parse(row.body) as { event: Record<string, unknown> }
      const next = applyStateEvent(state, frame.event, Number.POSITIVE_INFINITY)
      if ('state' in next) state = next.state
    }
    if (rows.length < STATE_PAGE_ROWS) return state
    after = rows.at(-1)!.seq
  }
}

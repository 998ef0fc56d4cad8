import type { AppendPlan, CommitResult } from './append_plan.js'
import type { NewRow } from './rows.js'
import type { GroupMember, GroupOutcome } from './commit_group.js'
import { isTransientError } from './transient.js'
import { recordGroupCommit } from '../telemetry/metrics/index.js'

interface Waiting extends GroupMember {
  resolve: (result: CommitResult | null) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: the commits a replica's writers ask for are carried by few transactions, one at a
 * time. A commit asked while no group is in flight goes at the next turn of the event loop (with
 * whatever else was asked in that turn); commits asked while a group is in flight wait for it and
 * then go together, up to `maxMembers` streams per group, one commit per stream per group (a
 * second one for the same stream waits for the next group, in order). A message's first text
 * (`AppendPlan.leading`) asked while a group is in flight goes alone at once instead: time to
 * first token never waits for other streams' commits. Under load, transactions
 * per second thus follow the database's speed, not the number of talking runs.
 *
 * Each member keeps its own outcome: a member whose stream is not open fails alone (see
 * `commitGroupInTransaction`). When the group's transaction fails:
 *
 * - transiently (a lost connection, a deadlock): every member gets that error; its writer retries
 *   it alone with its own token (`AppendPlan.retried`), which finds out whether the group landed,
 *   so nothing is written twice;
 * - otherwise (it rolled back): every member is committed again alone, so only the one at fault
 *   fails (with `retried` when it has a token: the look-up costs one read and makes sure).
 */
export class GroupCommits {
  #waiting: Waiting[] = []
  #inFlight = false
  #scheduled = false

  constructor(
    /** Commit several streams in one transaction. */
    readonly group: (members: GroupMember[]) => Promise<GroupOutcome[]>,
    /** Commit one stream in its own transaction (the store's path for any plan). */
    readonly alone: (
      runId: string,
      plan: AppendPlan,
      rows: NewRow[]
    ) => Promise<CommitResult | null>,
    readonly maxMembers: number
  ) {}

  /** Commit `plan` (its `rows`) to `runId` in the next group. Resolves once that group committed. */
  commit(runId: string, plan: AppendPlan, rows: NewRow[]): Promise<CommitResult | null> {
    // The leading edge of a message (its first text) never waits for a group in flight: it
    // goes alone at once (time to first token); with none in flight it joins the next group.
    if (plan.leading && this.#inFlight) {
      recordGroupCommit(1)
      return this.alone(runId, plan, rows)
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ runId, plan, rows, resolve, reject })
      this.#schedule()
    })
  }

  #schedule() {
    if (this.#inFlight || this.#scheduled || this.#waiting.length === 0) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      void this.#next()
    })
  }

  async #next() {
    if (this.#inFlight) return
    const batch: Waiting[] = []
    const rest: Waiting[] = []
    const streams = new Set<string>()
    for (const waiting of this.#waiting) {
      if (batch.length < this.maxMembers && !streams.has(waiting.runId)) {
        streams.add(waiting.runId)
        batch.push(waiting)
      } else {
        rest.push(waiting)
      }
    }
    this.#waiting = rest
    if (batch.length === 0) return
    this.#inFlight = true
    try {
      await this.#commit(batch)
    } finally {
      this.#inFlight = false
      this.#schedule()
    }
  }

  async #commit(batch: Waiting[]) {
    recordGroupCommit(batch.length)
    if (batch.length === 1) {
      const [only] = batch
      return this.alone(only.runId, only.plan, only.rows).then(only.resolve, only.reject)
    }
    let outcomes: GroupOutcome[]
    try {
      outcomes = await this.group(batch)
    } catch (error) {
      if (isTransientError(error)) {
        for (const member of batch) member.reject(error)
        return
      }
      await Promise.all(
        batch.map((member) =>
          this.alone(
            member.runId,
            { ...member.plan, retried: Boolean(member.plan.token) },
            member.rows
          ).then(member.resolve, member.reject)
        )
      )
      return
    }
    outcomes.forEach((outcome, i) => {
      if ('error' in outcome) batch[i].reject(outcome.error)
      else batch[i].resolve(outcome.result)
    })
  }
}

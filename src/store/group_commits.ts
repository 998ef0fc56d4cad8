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
 * Group commit: the commits a replica's writers ask for are carried by few transactions, at most
 * `maxInFlight` at a time (issue 26: two, so that one group's statements run while the other's
 * commit is written, and a commit asked meanwhile waits for less). A commit asked while fewer
 * groups are in flight goes at the next turn of the event loop (with whatever else was asked in
 * that turn); commits asked while all are in flight wait for one and then go together, up to
 * `maxMembers` streams per group, one commit per stream at a time (a second one for a stream
 * whose group is in flight waits for the next group, in order). Groups in flight thus name
 * distinct streams, and lock distinct stream rows. A message's first text
 * (`AppendPlan.leading`) asked while a group is in flight goes alone at once instead, at most
 * `maxAlone` of them at a time: time to first token never waits for other streams' commits,
 * and a storm of runs starting at once (hundreds of first texts in one moment) joins the next
 * group rather than queueing hundreds of transactions ahead of it on the connection pool. Under
 * load, transactions per second thus follow the database's speed, not the number of talking
 * runs.
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
  /** Groups in flight, and the streams they carry. */
  #inFlight = 0
  #busy = new Set<string>()
  /** Leading commits gone alone, in flight. */
  #alone = 0
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
    readonly maxMembers: number,
    readonly maxInFlight = 2,
    readonly maxAlone = 4
  ) {}

  /** Commit `plan` (its `rows`) to `runId` in the next group. Resolves once that group committed. */
  commit(runId: string, plan: AppendPlan, rows: NewRow[]): Promise<CommitResult | null> {
    // The leading edge of a message (its first text) never waits for a group in flight: it
    // goes alone at once (time to first token); with none in flight it joins the next group.
    if (
      plan.leading &&
      this.#inFlight > 0 &&
      this.#alone < this.maxAlone &&
      !this.#busy.has(runId)
    ) {
      recordGroupCommit(1)
      this.#alone++
      return this.alone(runId, plan, rows).finally(() => this.#alone--)
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ runId, plan, rows, resolve, reject })
      this.#schedule()
    })
  }

  #schedule() {
    if (this.#inFlight >= this.maxInFlight || this.#scheduled || this.#waiting.length === 0) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      void this.#next()
    })
  }

  async #next() {
    if (this.#inFlight >= this.maxInFlight) return
    const batch: Waiting[] = []
    const rest: Waiting[] = []
    const busy = this.#busy
    for (const waiting of this.#waiting) {
      // A stream already in this group or in one in flight: its commit waits, in order.
      if (batch.length < this.maxMembers && !busy.has(waiting.runId)) {
        busy.add(waiting.runId)
        batch.push(waiting)
      } else {
        rest.push(waiting)
      }
    }
    this.#waiting = rest
    if (batch.length === 0) return
    this.#inFlight++
    try {
      await this.#commit(batch)
    } finally {
      for (const member of batch) busy.delete(member.runId)
      this.#inFlight--
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

import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { affectedRows as affected, nowMs as now } from './sql.js'
import type { TableNames } from './schema.js'
import { DEFAULTS } from '../defaults.js'
import { deleteOrphanCheckpoints, deleteStreamCheckpoints } from './checkpoint_rows.js'
import {
  countPurgeable,
  deleteOrphanRows,
  firstEnded,
  purgeStreams,
  purgeWindow,
} from './purge_rows.js'
import { PurgeWalk } from './purge_walk.js'
import { deleteDurableOrphans, settleDurableStreams } from './durable_purge.js'
import { commitInTransaction } from './commit.js'
import { commitGroupInTransaction, groupable, type GroupMember } from './commit_group.js'
import { GroupCommits } from './group_commits.js'
import { planRows, type AppendPlan, type CommitResult } from './append_plan.js'
import { int, type NewRow } from './rows.js'
import { notifiedTransaction, type NotifiedWork, type WakeUps } from './wake_ups.js'
import { openStream, type OpenedStream } from './stream_open.js'

export { StreamExistsError } from './stream_open.js'

/**
 * The writes of streams, through Lucid, and the connection they share with the reads
 * (`StreamReads`): open, append (alone or in a group), renew a lease, remove, purge. Every write
 * runs in one transaction that starts by updating the stream's row: that row lock serializes
 * writers of one stream across processes, so seqs are allocated gap-free and commit in seq
 * order with no retry loop; each transaction wakes the other replicas (`notifiedTransaction`).
 */
export class StreamStore {
  #client: QueryClientContract | null = null
  #groups: GroupCommits | null
  /** The checkpoints table is missing (a schema migrated before it): removals skip it. */
  #noCheckpoints = false

  constructor(
    /** Opens the Lucid client on first use (so a sink nobody uses opens no connection). */
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames,
    /** PostgreSQL NOTIFY channel to wake other replicas on commit; `null` for none. */
    readonly notifyChannel: string | null,
    /** Told after each committed transaction that changed a stream (see `WakeUps.committed`). */
    readonly committed?: (runId: string, rev?: number) => void,
    /**
     * Group commit: plain appends of several streams ride in one transaction (see
     * {@link GroupCommits}), at most this many streams per group; 0 or 1: every commit alone.
     */
    readonly groupMembers: number = DEFAULTS.groupCommitMembers
  ) {
    this.#groups =
      groupMembers > 1
        ? new GroupCommits(
            (members) => this.#commitGroup(members),
            (runId, plan, rows) => this.#commitAlone(runId, plan, rows),
            groupMembers,
            DEFAULTS.groupCommitsInFlight,
            DEFAULTS.groupCommitLeadingAlone
          )
        : null
  }

  /** The Lucid client the tables live on, opened on first use. */
  get client(): QueryClientContract {
    this.#client ??= this.connect()
    return this.#client
  }

  /** Lucid's dialect name (`postgres`, `mysql`, `better-sqlite3`, ...). */
  get dialect(): string {
    return this.client.dialect.name
  }

  /**
   * Create the stream, or reopen an ended or failed one, in ONE transaction; see
   * {@link openStream} (`within`, `segment`, `only: 'new'`).
   */
  open(
    runId: string,
    leaseMs: number,
    within?: (trx: TransactionClientContract) => Promise<void>,
    segment?: string | null,
    only?: 'new'
  ): Promise<OpenedStream> {
    const deps = {
      tables: this.tables,
      transaction: <T>(work: NotifiedWork<T>) => this.#transaction(work),
    }
    return openStream(deps, this.dialect === 'mysql', { runId, leaseMs, within, segment, only })
  }

  /**
   * Commit a plan (see {@link commitInTransaction}): a plain append joins this replica's next
   * group of commits (one transaction for several streams, see {@link GroupCommits}), any other
   * plan gets a transaction of its own. Either way it is all or nothing for this stream, and
   * resolves once committed.
   *
   * @throws StreamClosedError when the stream is not open (ended, failed or purged; with
   *   `evenIfClosed`, only when it does not exist); nothing is written then
   */
  async commit(runId: string, plan: AppendPlan): Promise<CommitResult | null> {
    const rows = planRows(plan)
    if (this.#groups && groupable(plan, rows)) return this.#groups.commit(runId, plan, rows)
    return this.#commitAlone(runId, plan, rows)
  }

  /** Several streams' plain appends in one transaction (see {@link commitGroupInTransaction}). */
  #commitGroup(members: GroupMember[]) {
    return this.#transaction((trx, _notify, notifyAll) =>
      commitGroupInTransaction(
        trx,
        {
          tables: this.tables,
          dialect: this.dialect,
          notify: (_trx, commits) => notifyAll(commits),
        },
        members
      )
    )
  }

  #commitAlone(runId: string, plan: AppendPlan, rows: NewRow[]): Promise<CommitResult | null> {
    return this.#transaction((trx, notify) =>
      commitInTransaction(
        trx,
        {
          tables: this.tables,
          dialect: this.dialect,
          notify: (_trx, id, rev) => notify(id, rev),
        },
        runId,
        plan,
        rows
      )
    )
  }

  /**
   * Renew a writer's lease, while it holds the stream (`epoch`: no other replica took it over).
   * Returns false when the stream is no longer open, or no longer the writer's.
   */
  async renewLease(runId: string, leaseMs: number, epoch?: number): Promise<boolean> {
    const at = now()
    const query = this.client
      .from(this.tables.streams)
      .where('run_id', runId)
      .where('status', 'open')
    if (epoch !== undefined) query.where('writer_epoch', epoch)
    const touched = await query.update({ lease_expires_at: at + leaseMs, updated_at: at })
    return affected(touched) > 0
  }

  /**
   * Open streams whose writer's lease lapsed and that record a running segment (another replica
   * may continue it), oldest lapse first, at most `limit`.
   */
  async lapsedSegments(limit: number): Promise<string[]> {
    const rows = await this.client
      .from(this.tables.streams)
      .select('run_id')
      .where('status', 'open')
      .where('lease_expires_at', '<', now())
      .whereNotNull('segment')
      .orderBy('lease_expires_at', 'asc')
      .limit(limit)
    return rows.map((row: { run_id: string }) => row.run_id)
  }

  /** The stream's writer epoch, or `null` when it does not exist. */
  async epochOf(runId: string): Promise<number | null> {
    const row = await this.client
      .from(this.tables.streams)
      .select('writer_epoch')
      .where('run_id', runId)
      .first()
    return row ? int(row.writer_epoch) : null
  }

  /** The running segment a stream records (JSON), or `null`. */
  async segment(runId: string): Promise<string | null> {
    const row = await this.client
      .from(this.tables.streams)
      .select('segment')
      .where('run_id', runId)
      .first()
    return (row?.segment as string | null | undefined) ?? null
  }

  /**
   * Forget the running segment an open stream records, so that no replica takes it over: its
   * writes are refused by the database (a takeover would be refused the same way, on every
   * replica, at every sweep). Only the streams row is touched (a trigger on the frames table does
   * not stop it); the lease is left to lapse, which ends the stream's readers everywhere.
   */
  async dropSegment(runId: string): Promise<void> {
    await this.client
      .from(this.tables.streams)
      .where('run_id', runId)
      .where('status', 'open')
      .update({ segment: null })
  }

  /**
   * Delete one stream, its frames and its stored translator checkpoints (`close`; a purge removes
   * more, see {@link purge}). Returns whether it was deleted.
   */
  async remove(runId: string): Promise<boolean> {
    return this.#transaction(async (trx, notify) => {
      const query = trx.from(this.tables.streams).where('run_id', runId)
      const deleted = affected(await query.delete())
      if (deleted === 0) return false
      await trx.from(this.tables.frames).where('run_id', runId).delete()
      if (!this.#noCheckpoints)
        this.#noCheckpoints = !(await deleteStreamCheckpoints(trx, this.tables, runId))
      await notify(runId)
      return true
    })
  }

  /**
   * Delete stored translator checkpoints left without their stream (a write that raced its
   * removal), `limit` streams at a time; see `deleteOrphanCheckpoints`. Returns the rows deleted.
   */
  async removeOrphanCheckpoints(limit: number): Promise<number> {
    if (this.#noCheckpoints) return 0
    return deleteOrphanCheckpoints(this.client, this.tables, limit)
  }

  /** A walk over the streams ended before `endedBefore`, `size` at a time; see `PurgeWalk`. */
  purgeWalk(endedBefore: number, size: number): PurgeWalk {
    return new PurgeWalk(
      endedBefore,
      size,
      () => firstEnded(this.client, this.tables, endedBefore),
      (lo, hi, skip, limit) => purgeWindow(this.client, this.tables, { lo, hi, skip }, limit)
    )
  }

  /** How many streams a purge would remove now, and the oldest one's end; see `countPurgeable`. */
  purgeableCount(endedBefore: number) {
    return countPurgeable(this.client, this.tables, endedBefore)
  }

  /**
   * Remove the streams among `runIds` still due (ended before `endedBefore`, no live park) and
   * everything they own, in ONE transaction (see `purgeStreams`); their readers are woken.
   * Returns how many streams this purge removed (not those a concurrent one removed first), and
   * those kept (not due after all).
   */
  async purge(
    runIds: string[],
    endedBefore: number
  ): Promise<{ deleted: number; kept: Set<string> }> {
    return this.#transaction(async (trx, _notify, notifyAll) => {
      const done = await purgeStreams(trx, this.tables, runIds, endedBefore, !this.#noCheckpoints)
      this.#noCheckpoints = !done.checkpoints
      await notifyAll(done.removed.map((runId) => [runId]))
      return { deleted: done.deleted, kept: done.kept }
    })
  }

  /**
   * Delete rows a stream owned that outlived it (created before `before`), `limit` streams at a
   * time; see `deleteOrphanRows`. Returns the rows deleted.
   */
  removeOrphanRows(before: number, limit: number): Promise<number> {
    return deleteOrphanRows(this.client, this.tables, before, limit)
  }

  /** End the write path's expired Durable Streams (a purge then removes them); see `settleDurableStreams`. */
  settleDurable(at: number): Promise<void> {
    return settleDurableStreams(this.client, this.tables, at)
  }

  /** Delete the write path's metadata rows left without their stream; see `deleteDurableOrphans`. */
  removeDurableOrphans(): Promise<number> {
    return deleteDurableOrphans(this.client, this.tables)
  }

  /** A transaction on this store's client that wakes other replicas (see `notifiedTransaction`). */
  #transaction<T>(work: NotifiedWork<T>): Promise<T> {
    const wakeUps: WakeUps = { channel: this.notifyChannel, committed: this.committed }
    return notifiedTransaction(this.client, wakeUps, work)
  }
}

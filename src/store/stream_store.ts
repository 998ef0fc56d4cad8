import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { affectedRows as affected, inTransaction, nowMs as now } from './sql.js'
import type { TableNames } from './schema.js'
import { DEFAULTS } from '../defaults.js'
import { deleteOrphanCheckpoints, deleteStreamCheckpoints } from './checkpoint_rows.js'
import { deleteOrphanRows, purgeableStreams, purgeStreams } from './purge_rows.js'
import { commitInTransaction } from './commit.js'
import { commitGroupInTransaction, groupable, type GroupMember } from './commit_group.js'
import { GroupCommits } from './group_commits.js'
import {
  int,
  toStoredRow,
  type CommitPlan,
  type CommitResult,
  type RawRow,
  type StoredRow,
  type StreamHead,
} from './rows.js'

export * from './rows.js'

/**
 * The SQL side of streams, through Lucid. Every write runs in one transaction that starts by
 * updating the stream's row: that row lock serializes writers of one stream across processes, so
 * seqs are allocated gap-free and commit in seq order (DESIGN.md invariant 3) with no retry loop.
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
    /**
     * Told after each committed transaction that changed a stream (write, open, removal), with
     * the run id and the stream's revision when known: for wake-ups that cannot ride in the
     * transaction (Redis). Never called for a rollback. Must not throw.
     */
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
            (runId, plan) => this.#commitAlone(runId, plan),
            groupMembers
          )
        : null
  }

  get client(): QueryClientContract {
    this.#client ??= this.connect()
    return this.#client
  }

  /** Lucid's dialect name (`postgres`, `mysql`, `better-sqlite3`, ...). */
  get dialect(): string {
    return this.client.dialect.name
  }

  /**
   * Create the stream, or reopen an ended or failed one (its sequence continues); `within` runs
   * in the reopen's transaction (a throw undoes the reopen and is rethrown). Returns the last seq.
   */
  async open(
    runId: string,
    leaseMs: number,
    within?: (trx: TransactionClientContract) => Promise<void>
  ): Promise<number> {
    const at = now()
    await this.client
      .knexQuery()
      .table(this.tables.streams)
      .insert({
        run_id: runId,
        last_seq: 0,
        rev: 0,
        status: 'open',
        lease_expires_at: at + leaseMs,
        created_at: at,
        updated_at: at,
      })
      .onConflict('run_id')
      .ignore()
    return this.#withTransaction(async (trx, notify) => {
      await trx
        .from(this.tables.streams)
        .where('run_id', runId)
        .update({
          status: 'open',
          rev: trx.raw('rev + 1'),
          lease_expires_at: at + leaseMs,
          updated_at: at,
          ended_at: null,
        })
      // The caller's own writes (a resume marking its suspension resumed): all or nothing with
      // the reopen, which a throw here undoes.
      if (within) await within(trx)
      const row = await trx.from(this.tables.streams).where('run_id', runId).first()
      await notify(runId, int(row.rev))
      return int(row.last_seq)
    })
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
  async commit(runId: string, plan: CommitPlan): Promise<CommitResult | null> {
    if (this.#groups && groupable(plan)) return this.#groups.commit(runId, plan)
    return this.#commitAlone(runId, plan)
  }

  /** Several streams' plain appends in one transaction (see {@link commitGroupInTransaction}). */
  #commitGroup(members: GroupMember[]) {
    return this.#withTransaction((trx, _notify, notifyAll) =>
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

  #commitAlone(runId: string, plan: CommitPlan): Promise<CommitResult | null> {
    return this.#withTransaction((trx, notify) =>
      commitInTransaction(
        trx,
        {
          tables: this.tables,
          dialect: this.dialect,
          notify: (_trx, id, rev) => notify(id, rev),
        },
        runId,
        plan
      )
    )
  }

  /**
   * Replace the body of a row inside the transaction that inserted it (`CommitPlan.within`):
   * for what only that commit knows (the park an approval joined). `row` is updated too, so the
   * commit hands readers what is stored.
   */
  async rewrite(trx: TransactionClientContract, runId: string, row: StoredRow, body: string) {
    await trx.from(this.tables.frames).where('run_id', runId).where('seq', row.seq).update({ body })
    row.body = body
  }

  /** Renew a writer's lease. Returns false when the stream is no longer open. */
  async renewLease(runId: string, leaseMs: number): Promise<boolean> {
    const at = now()
    const touched = await this.client
      .from(this.tables.streams)
      .where('run_id', runId)
      .where('status', 'open')
      .update({ lease_expires_at: at + leaseMs, updated_at: at })
    return affected(touched) > 0
  }

  /** The heads of many streams in one read; a stream that does not exist is absent. */
  async heads(runIds: string[]): Promise<Map<string, StreamHead>> {
    const heads = new Map<string, StreamHead>()
    for (let i = 0; i < runIds.length; i += DEFAULTS.headsBatch) {
      const rows = await this.client
        .from(this.tables.streams)
        .select('run_id', 'last_seq', 'rev', 'status', 'lease_expires_at')
        .whereIn('run_id', runIds.slice(i, i + DEFAULTS.headsBatch))
      for (const row of rows) {
        heads.set(row.run_id, {
          lastSeq: int(row.last_seq),
          rev: int(row.rev),
          status: row.status,
          leaseExpiresAt: row.lease_expires_at === null ? null : int(row.lease_expires_at),
        })
      }
    }
    return heads
  }

  /**
   * A read of frames rows with each row's size (`size`, UTF-8 bytes as SQL counts them) and its
   * body only when at most `small` bytes (else `body` is null: a second read brings the bodies
   * a page keeps), so a read never brings more bodies than it may keep. For {@link page} and
   * {@link pages}, which add the rows to read.
   */
  #sizedRows(small: number) {
    // (Capped to a 32-bit integer: SQL compares it with a size.)
    const cap = Math.min(Math.floor(small), 2 ** 31 - 1)
    return this.client
      .from(this.tables.frames)
      .select('seq', 'kind', 'component_id', 'superseded', 'created_at')
      .select(this.client.knexRawQuery('octet_length(body) as size'))
      .select(
        this.client.knexRawQuery('case when octet_length(body) <= ? then body end as body', [cap])
      )
  }

  /**
   * One page of rows from `fromSeq` (inclusive), in seq order: at most `limit` rows, and no more
   * than `maxBytes` of bodies (UTF-8 bytes, as SQL counts them): a page stops before the row that
   * would take it past `maxBytes`. The first two rows are read whatever their size (a row is at
   * most `maxFrameBytes`), so a page always makes progress past a cursor's own row. `more` says
   * rows may follow (the page stopped at a limit); otherwise the stream had no more.
   *
   * One read brings every row's size, and the bodies of rows small enough that `limit` of them
   * fit in `maxBytes` (most rows: one query); the bodies of larger rows the page takes come in a
   * second read. So a read never brings more than `maxBytes` of bodies it does not keep.
   *
   * Seqs are gap-free, so the bounded range selects exactly those rows, and keeps every planner
   * on the primary key (an open-ended range on a freshly filled table led PostgreSQL to scan and
   * sort the whole rest of the run).
   */
  async page(
    runId: string,
    fromSeq: number,
    limit: number,
    maxBytes: number
  ): Promise<{ rows: StoredRow[]; more: boolean }> {
    // Seqs start at 1: from 0 a page would be one row short of `limit` and say no more follow.
    fromSeq = Math.max(1, fromSeq)
    const found: SizedRow[] = await this.#sizedRows(maxBytes / limit)
      .where('run_id', runId)
      .whereBetween('seq', [fromSeq, fromSeq + limit - 1])
      .orderBy('seq', 'asc')
    let taken = 0
    let bytes = 0
    for (const row of found) {
      bytes += int(row.size)
      if (taken >= 2 && bytes > maxBytes) break
      taken++
    }
    const page = found.slice(0, taken)
    const missing = page.filter((row) => row.body === null).map((row) => int(row.seq))
    if (missing.length > 0) {
      const bodies = new Map<number, string>()
      const read = await this.client
        .from(this.tables.frames)
        .select('seq', 'body')
        .where('run_id', runId)
        .whereIn('seq', missing)
      for (const row of read) bodies.set(int(row.seq), row.body)
      for (const row of page) row.body ??= bodies.get(int(row.seq)) ?? null
    }
    // A row deleted in between (a purge): the page stops before it (no gap), and its readers end.
    const kept = untilMissing(page)
    return {
      rows: kept.map((row) => toStoredRow(row as RawRow)),
      more: kept.length < page.length || taken < found.length || found.length === limit,
    }
  }

  /**
   * The new rows of several streams in one read (a tail woken for many streams by one commit):
   * for each `{ runId, fromSeq }`, its rows from `fromSeq` (inclusive), at most `limit`, in seq
   * order, as {@link page} reads one stream. The bodies it brings stay within `maxBytes` in all
   * (UTF-8 bytes, as SQL counts them): a stream whose rows would take the read past it is left
   * out (absent from the result: read it with {@link page}, which takes large rows one page at a
   * time). `more` per stream: rows may follow (it reached `limit`).
   *
   * Each stream's range is bounded on both sides (seqs are gap-free), as in {@link page}, so the
   * read stays on the primary key: one index range per stream. One OR term per stream: give it
   * at most `DEFAULTS.tailBatchStreams` streams (SQLite caps an expression's depth at 1000).
   */
  async pages(
    requests: { runId: string; fromSeq: number }[],
    limit: number,
    maxBytes: number
  ): Promise<Map<string, { rows: StoredRow[]; more: boolean }>> {
    const out = new Map<string, { rows: StoredRow[]; more: boolean }>()
    if (requests.length === 0) return out
    type Found = SizedRow & { run_id: string }
    const found: Found[] = await this.#sizedRows(maxBytes / (limit * requests.length))
      .select('run_id')
      .where((query) => {
        for (const request of requests) {
          // (From seq 1 at the least, as in `page`.)
          const fromSeq = Math.max(1, request.fromSeq)
          query.orWhere((range) =>
            range.where('run_id', request.runId).whereBetween('seq', [fromSeq, fromSeq + limit - 1])
          )
        }
      })
      .orderBy('seq', 'asc')
    const byStream = new Map<string, Found[]>()
    for (const row of found) {
      const rows = byStream.get(row.run_id)
      if (rows) rows.push(row)
      else byStream.set(row.run_id, [row])
    }
    let bytes = 0
    const taken: [string, Found[]][] = []
    for (const { runId } of requests) {
      const rows = byStream.get(runId) ?? []
      const size = rows.reduce((sum, row) => sum + int(row.size), 0)
      if (bytes + size > maxBytes) continue
      bytes += size
      taken.push([runId, rows])
    }
    // The bodies of larger rows, in a second read: one OR term per stream, as in the first.
    const missing = taken
      .map(([runId, rows]) => [runId, rows.filter((row) => row.body === null)] as const)
      .filter(([, rows]) => rows.length > 0)
    if (missing.length > 0) {
      const bodies = new Map<string, string>()
      const read = await this.client
        .from(this.tables.frames)
        .select('run_id', 'seq', 'body')
        .where((query) => {
          for (const [runId, rows] of missing) {
            const seqs = rows.map((row) => int(row.seq))
            query.orWhere((row) => row.where('run_id', runId).whereIn('seq', seqs))
          }
        })
      for (const row of read) bodies.set(`${row.run_id}\n${int(row.seq)}`, row.body)
      for (const [runId, rows] of missing) {
        for (const row of rows) row.body = bodies.get(`${runId}\n${int(row.seq)}`) ?? null
      }
    }
    for (const [runId, rows] of taken) {
      // A row deleted in between (a purge): the page stops before it (no gap); its readers end.
      const kept = untilMissing(rows)
      out.set(runId, {
        rows: kept.map((row) => toStoredRow(row as RawRow)),
        more: kept.length < rows.length || rows.length === limit,
      })
    }
    return out
  }

  /** Seq of the first segment end after `afterSeq` (where that segment ended), or `null`. */
  async segmentEnd(runId: string, afterSeq: number): Promise<number | null> {
    const row = await this.client
      .from(this.tables.frames)
      .where('run_id', runId)
      .where('kind', 'end')
      .where('body', '')
      .where('seq', '>', afterSeq)
      .min('seq as seq')
      .first()
    return row?.seq === null || row?.seq === undefined ? null : Number(row.seq)
  }

  /** The stream's last row (for a follower's starting point), or `null` when it has none. */
  async lastRow(runId: string): Promise<StoredRow | null> {
    const row = await this.client
      .from(this.tables.frames)
      .select('seq', 'kind', 'body', 'component_id', 'superseded')
      .where('run_id', runId)
      .orderBy('seq', 'desc')
      .first()
    return row ? toStoredRow(row) : null
  }

  /**
   * The stream's row, parsed (times in epoch milliseconds), or `null` when the stream does not
   * exist (never opened, or purged).
   */
  async head(runId: string): Promise<
    | (StreamHead & {
        runId: string
        createdAt: number
        updatedAt: number
        endedAt: number | null
      })
    | null
  > {
    const row = await this.client.from(this.tables.streams).where('run_id', runId).first()
    if (!row) return null
    return {
      runId: row.run_id,
      lastSeq: int(row.last_seq),
      rev: int(row.rev),
      status: row.status,
      leaseExpiresAt: row.lease_expires_at === null ? null : int(row.lease_expires_at),
      createdAt: int(row.created_at),
      updatedAt: int(row.updated_at),
      endedAt: row.ended_at === null ? null : int(row.ended_at),
    }
  }

  async exists(runId: string): Promise<boolean> {
    const row = await this.client
      .from(this.tables.streams)
      .select('run_id')
      .where('run_id', runId)
      .first()
    return Boolean(row)
  }

  /** Streams that are open with a lapsed lease, among `runIds`. */
  lapsed(heads: Map<string, StreamHead>, at = now()): string[] {
    const runIds: string[] = []
    for (const [runId, head] of heads) {
      if (head.status === 'open' && head.leaseExpiresAt !== null && head.leaseExpiresAt < at) {
        runIds.push(runId)
      }
    }
    return runIds
  }

  /**
   * Delete one stream, its frames and its stored translator checkpoints (`close`; a purge removes
   * more, see {@link purge}). Returns whether it was deleted.
   */
  async remove(runId: string): Promise<boolean> {
    return this.#withTransaction(async (trx, notify) => {
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

  /** Up to `limit` streams a purge may remove, oldest end first; see `purgeableStreams`. */
  purgeable(endedBefore: number, limit: number): Promise<string[]> {
    return purgeableStreams(this.client, this.tables, endedBefore, limit)
  }

  /**
   * Remove the streams among `runIds` still due (ended before `endedBefore`, no live park) and
   * everything they own, in ONE transaction (see `purgeStreams`); their readers are woken.
   * Returns how many streams went.
   */
  async purge(runIds: string[], endedBefore: number): Promise<number> {
    return this.#withTransaction(async (trx, _notify, notifyAll) => {
      const done = await purgeStreams(trx, this.tables, runIds, endedBefore, !this.#noCheckpoints)
      this.#noCheckpoints = !done.checkpoints
      await notifyAll(done.removed.map((runId) => [runId]))
      return done.removed.length
    })
  }

  /**
   * Delete rows a stream owned that outlived it (created before `before`), `limit` streams at a
   * time; see `deleteOrphanRows`. Returns the rows deleted.
   */
  removeOrphanRows(before: number, limit: number): Promise<number> {
    return deleteOrphanRows(this.client, this.tables, before, limit)
  }

  /**
   * Wake other replicas on commit. The payload is `<runId>` or `<runId> <rev>`: ids only, never
   * data (and far below PostgreSQL's 8000-byte limit). The rev lets a replica that already has
   * this commit (its own writer handed it over) skip the read. PostgreSQL NOTIFY rides in the
   * transaction (delivered on commit); `committed` is told once the commit succeeded.
   */
  async #withTransaction<T>(
    work: (
      trx: TransactionClientContract,
      notify: (runId: string, rev?: number) => Promise<void>,
      notifyAll: (commits: [runId: string, rev?: number][]) => Promise<void>
    ) => Promise<T>
  ): Promise<T> {
    const notified: [runId: string, rev?: number][] = []
    // inTransaction checks the COMMIT's own outcome: a COMMIT that failed (outcome unknown)
    // throws here, so nothing is published for it (the writer's token-checked retry is).
    const result = await inTransaction(this.client, (trx) => {
      // Several streams' wake-ups in one statement (a group commit's).
      const notifyAll = async (commits: [runId: string, rev?: number][]) => {
        if (this.notifyChannel && commits.length > 0) {
          const calls = commits.map(() => 'pg_notify(?, ?)').join(', ')
          const bindings = commits.flatMap(([runId, rev]) => [
            this.notifyChannel!,
            rev === undefined ? runId : `${runId} ${rev}`,
          ])
          await trx.rawQuery(`select ${calls}`, bindings)
        }
        if (this.committed) notified.push(...commits)
      }
      return work(trx, (runId: string, rev?: number) => notifyAll([[runId, rev]]), notifyAll)
    })
    for (const [runId, rev] of notified) {
      // The rows are committed: a failing wake-up must never make the write look failed (a
      // retry would duplicate it). The heads poll covers a lost wake-up.
      try {
        this.committed!(runId, rev)
      } catch {}
    }
    return result
  }
}

/** A frames row read with its size, its body only when small ({@link StreamStore.page}). */
type SizedRow = Omit<RawRow, 'body'> & { size: unknown; body: string | null }

/** The rows before the first whose body is missing (deleted between two reads). */
function untilMissing<T extends { body: string | null }>(rows: T[]): T[] {
  const missing = rows.findIndex((row) => row.body === null)
  return missing === -1 ? rows : rows.slice(0, missing)
}

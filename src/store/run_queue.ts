import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { affectedRows, inTransaction, nowMs } from './sql.js'
import { isMissingTable } from './checkpoint_rows.js'

/**
 * The busy-thread queue's rows (`agent_run_queue`, `createRunQueueTable`), through Lucid: a
 * message waiting for its thread's current run to end (`multitaskStrategy: 'enqueue'`). What a
 * queued run will start is opaque here (`start`, JSON). Every replica reads and claims the same
 * rows: a row is started by exactly one replica (its claim, one UPDATE), and deleted once started.
 */

/** One queued message. */
export interface QueuedRun {
  runId: string
  threadId: string
  ownerId: string | null
  /** What starting it takes (the door run it records, the runner's input, the principal, ...). */
  start: unknown
  status: 'queued' | 'starting'
  /** When a `starting` row's claim lapses (database time, ms). */
  claimExpiresAt?: number | null
}

/** What {@link RunQueueRows.enqueue} answers: the message's place (1: next), or the queue full. */
export type Enqueued = { position: number } | { full: true }

const toQueued = (row: Record<string, any>): QueuedRun => ({
  runId: row.run_id,
  threadId: row.thread_id,
  ownerId: row.owner_id ?? null,
  start: JSON.parse(row.start),
  status: row.status,
  claimExpiresAt: row.claim_expires_at === null ? null : Number(row.claim_expires_at),
})

export class RunQueueRows {
  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  /**
   * Queue a message at the end of its thread's queue, unless `max` wait there already: in one
   * transaction that first locks the thread's claim row (`agent_threads`: every enqueue of a
   * thread waits for the one before it), so the bound holds and places never repeat across
   * replicas. Returns its place (1: it starts next), or `full` (nothing written).
   */
  async enqueue(run: Omit<QueuedRun, 'status' | 'claimExpiresAt'>, max: number): Promise<Enqueued> {
    const table = this.tables.runQueue
    return inTransaction(this.connect(), async (trx) => {
      await trx
        .from(this.tables.threads)
        .where('thread_id', run.threadId)
        .update({ owner_id: trx.raw('owner_id') })
      const rows = await trx.from(table).where('thread_id', run.threadId).select('position')
      if (rows.length >= max) return { full: true as const }
      const last = rows.reduce((top, row) => Math.max(top, Number(row.position)), 0)
      await trx.table(table).insert({
        run_id: run.runId,
        thread_id: run.threadId,
        position: last + 1,
        owner_id: run.ownerId,
        start: JSON.stringify(run.start),
        status: 'queued',
        claimed_by: null,
        claim_expires_at: null,
        created_at: nowMs(),
      })
      return { position: rows.length + 1 }
    })
  }

  /** How many messages wait in `threadId`'s queue (0 on a schema without the table). */
  async length(threadId: string): Promise<number> {
    try {
      const row = await this.connect()
        .from(this.tables.runQueue)
        .where('thread_id', threadId)
        .count('* as n')
        .first()
      return Number(row?.n ?? 0)
    } catch (error) {
      if (isMissingTable(error)) return 0
      throw error
    }
  }

  /** A queued message's place in its thread's queue (1: next), or `null` when it waits no more. */
  async placeOf(runId: string): Promise<number | null> {
    const table = this.tables.runQueue
    const own = await this.connect().from(table).where('run_id', runId).first()
    if (!own) return null
    const row = await this.connect()
      .from(table)
      .where('thread_id', own.thread_id)
      .where('position', '<', own.position)
      .count('* as n')
      .first()
    return Number(row?.n ?? 0) + 1
  }

  /** The first message of `threadId`'s queue, whatever its status, or `null`. */
  /** A queued message by its run id, or `null` once it waits no more (or never did). */
  async find(runId: string): Promise<QueuedRun | null> {
    try {
      const row = await this.connect().from(this.tables.runQueue).where('run_id', runId).first()
      return row ? toQueued(row) : null
    } catch (error) {
      if (isMissingTable(error)) return null
      throw error
    }
  }

  async head(threadId: string): Promise<QueuedRun | null> {
    const row = await this.connect()
      .from(this.tables.runQueue)
      .where('thread_id', threadId)
      .orderBy('position', 'asc')
      .first()
    return row ? toQueued(row) : null
  }

  /** Whether `run` (as read) is claimable: queued, or its claim lapsed (no write to learn it). */
  claimable(run: QueuedRun) {
    return run.status === 'queued' || (run.claimExpiresAt ?? 0) < nowMs()
  }

  /**
   * Claim `runId` for `replicaId` to start it: ONE statement, landing only on a `queued` row or
   * one whose claim lapsed (its replica died between the claim and the start). Returns whether
   * this replica won: across replicas exactly one does.
   */
  async claim(runId: string, replicaId: string, leaseMs: number): Promise<boolean> {
    const at = nowMs()
    const touched = await this.connect()
      .from(this.tables.runQueue)
      .where('run_id', runId)
      .where((q) =>
        q
          .where('status', 'queued')
          .orWhere((lapsed) =>
            lapsed.where('status', 'starting').where('claim_expires_at', '<', at)
          )
      )
      .update({ status: 'starting', claimed_by: replicaId, claim_expires_at: at + leaseMs })
    return affectedRows(touched) === 1
  }

  /** Give a claim back (the thread was not idle after all, or this replica drains). */
  async release(runId: string, replicaId: string) {
    await this.connect()
      .from(this.tables.runQueue)
      .where('run_id', runId)
      .where('claimed_by', replicaId)
      .update({ status: 'queued', claimed_by: null, claim_expires_at: null })
  }

  /** Forget a message once its run started (or could never start). */
  async remove(runId: string) {
    await this.connect().from(this.tables.runQueue).where('run_id', runId).delete()
  }

  /** Threads with messages waiting, at most `limit` (the sweeper's round). */
  async threads(limit: number): Promise<string[]> {
    try {
      const rows = await this.connect()
        .from(this.tables.runQueue)
        .distinct('thread_id')
        .limit(limit)
      return rows.map((row) => row.thread_id as string)
    } catch (error) {
      if (isMissingTable(error)) return []
      throw error
    }
  }
}

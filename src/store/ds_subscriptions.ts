import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import { affectedRows, inTransaction } from './sql.js'
import { int } from './rows.js'
import type { TableNames } from './schema.js'

/** A subscription's row, parsed. */
export interface SubscriptionRow {
  id: string
  config: string
  configHash: string
  ownerId: string | null
  generation: number
  wakeId: string | null
  /** The wake's snapshot: each stream's tail when it was issued (JSON text), or `null`. */
  wakeStreams: string | null
  holder: string | null
  leaseExpiresAt: number | null
  status: 'active' | 'failed'
  attempts: number
  nextAttemptAt: number | null
  createdAt: number
}

/** One stream a subscription follows. */
export interface SubscriptionLink {
  path: string
  explicit: boolean
  glob: boolean
  ackedOffset: string
}

/** The wake state a transition expects to find (compare-and-set: one replica wins). */
export interface WakeState {
  generation: number
  wakeId: string | null
}

const flag = (value: unknown) => value === true || value === 1 || value === '1'
const orNull = (value: unknown) => (value === null || value === undefined ? null : int(value))

function toRow(row: Record<string, unknown>): SubscriptionRow {
  return {
    id: String(row.id),
    config: String(row.config),
    configHash: String(row.config_hash),
    ownerId: (row.owner_id as string | null) ?? null,
    generation: int(row.generation),
    wakeId: (row.wake_id as string | null) ?? null,
    wakeStreams: (row.wake_streams as string | null) ?? null,
    holder: (row.holder as string | null) ?? null,
    leaseExpiresAt: orNull(row.lease_expires_at),
    status: row.status === 'failed' ? 'failed' : 'active',
    attempts: int(row.attempts),
    nextAttemptAt: orNull(row.next_attempt_at),
    createdAt: int(row.created_at),
  }
}

/**
 * The subscription tables' queries (PROTOCOL.md 6-7). Every change of a wake is a
 * compare-and-set on the row's generation and wake id, so of two replicas acting on one
 * subscription (an append on each, a lease that lapsed) exactly one moves it on.
 */
export class DsSubscriptionStore {
  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  async find(id: string): Promise<SubscriptionRow | null> {
    const row = await this.connect().from(this.tables.dsSubscriptions).where('id', id).first()
    return row ? toRow(row) : null
  }

  /** Every subscription (what an append is matched against). */
  async all(): Promise<SubscriptionRow[]> {
    const rows = await this.connect().from(this.tables.dsSubscriptions).select('*')
    return rows.map(toRow)
  }

  /** Subscriptions whose lease lapsed or whose retry is due at `now`. */
  async due(now: number): Promise<SubscriptionRow[]> {
    const rows = await this.connect()
      .from(this.tables.dsSubscriptions)
      .where((q) => q.where('lease_expires_at', '<=', now).orWhere('next_attempt_at', '<=', now))
      .select('*')
    return rows.map(toRow)
  }

  /** Insert a subscription with its first links; false when the id is taken. */
  async insert(
    row: Pick<SubscriptionRow, 'id' | 'config' | 'configHash' | 'ownerId' | 'createdAt'>,
    links: SubscriptionLink[]
  ): Promise<boolean> {
    try {
      await inTransaction(this.connect(), async (trx) => {
        await trx.insertQuery().table(this.tables.dsSubscriptions).insert({
          id: row.id,
          config: row.config,
          config_hash: row.configHash,
          owner_id: row.ownerId,
          generation: 0,
          status: 'active',
          attempts: 0,
          created_at: row.createdAt,
        })
        if (links.length === 0) return
        await trx
          .insertQuery()
          .table(this.tables.dsSubscriptionLinks)
          .multiInsert(links.map((link) => this.#linkRecord(row.id, link)))
      })
      return true
    } catch (error) {
      if (await this.find(row.id)) return false
      throw error
    }
  }

  /** Delete a subscription and its links (a tombstone: its wake's requests then fail). */
  async remove(id: string): Promise<boolean> {
    return inTransaction(this.connect(), async (trx) => {
      await trx.from(this.tables.dsSubscriptionLinks).where('subscription_id', id).delete()
      return affectedRows(await trx.from(this.tables.dsSubscriptions).where('id', id).delete()) > 0
    })
  }

  async links(id: string): Promise<SubscriptionLink[]> {
    const rows = await this.connect()
      .from(this.tables.dsSubscriptionLinks)
      .where('subscription_id', id)
      .orderBy('path')
      .select('*')
    return rows.map((row: Record<string, unknown>) => ({
      path: String(row.path),
      explicit: flag(row.explicit),
      glob: flag(row.glob),
      ackedOffset: String(row.acked_offset),
    }))
  }

  /**
   * Link `path` to a subscription (`explicit` or by its `glob`), acked at `acked` when the link
   * is new; an existing link only gains the kind.
   */
  async link(id: string, path: string, kind: 'explicit' | 'glob', acked: string) {
    const client = this.connect()
    const updated = await client
      .from(this.tables.dsSubscriptionLinks)
      .where({ subscription_id: id, path })
      .update({ [kind]: true })
    if (affectedRows(updated) > 0) return
    try {
      await client
        .insertQuery()
        .table(this.tables.dsSubscriptionLinks)
        .insert(
          this.#linkRecord(id, {
            path,
            explicit: kind === 'explicit',
            glob: kind === 'glob',
            ackedOffset: acked,
          })
        )
    } catch (error) {
      // Linked meanwhile (another append): the kind is added to that row.
      const again = await client
        .from(this.tables.dsSubscriptionLinks)
        .where({ subscription_id: id, path })
        .update({ [kind]: true })
      if (affectedRows(again) === 0) throw error
    }
  }

  /** Remove an explicit link; a glob link of the same path stays. */
  async unlinkExplicit(id: string, path: string) {
    await inTransaction(this.connect(), async (trx) => {
      await trx
        .from(this.tables.dsSubscriptionLinks)
        .where({ subscription_id: id, path })
        .update({ explicit: false })
      await trx
        .from(this.tables.dsSubscriptionLinks)
        .where({ subscription_id: id, path, explicit: false, glob: false })
        .delete()
    })
  }

  /** Move a link's acked offset forward to `offset` (never back: offsets sort as text). */
  async ack(id: string, path: string, offset: string) {
    await this.connect()
      .from(this.tables.dsSubscriptionLinks)
      .where({ subscription_id: id, path })
      .where('acked_offset', '<', offset)
      .update({ acked_offset: offset })
  }

  /**
   * Change the wake state of `id` from `from` to `to` (a compare-and-set); false when another
   * replica or request moved it first.
   */
  async transition(id: string, from: WakeState, to: Partial<SubscriptionRow>): Promise<boolean> {
    const query = this.connect()
      .from(this.tables.dsSubscriptions)
      .where('id', id)
      .where('generation', from.generation)
    if (from.wakeId === null) query.whereNull('wake_id')
    else query.where('wake_id', from.wakeId)
    const columns: Record<string, unknown> = {}
    const names: Record<string, string> = {
      generation: 'generation',
      wakeId: 'wake_id',
      wakeStreams: 'wake_streams',
      holder: 'holder',
      leaseExpiresAt: 'lease_expires_at',
      status: 'status',
      attempts: 'attempts',
      nextAttemptAt: 'next_attempt_at',
    }
    for (const [key, value] of Object.entries(to)) {
      if (names[key]) columns[names[key]] = value
    }
    return affectedRows(await query.update(columns)) > 0
  }

  #linkRecord(id: string, link: SubscriptionLink) {
    return {
      subscription_id: id,
      path: link.path,
      explicit: link.explicit,
      glob: link.glob,
      acked_offset: link.ackedOffset,
    }
  }
}

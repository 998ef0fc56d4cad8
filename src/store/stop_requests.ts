import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { affectedRows as affected, nowMs as now } from './sql.js'
import { int, type StreamStatus } from './rows.js'
import { notifiedTransaction, wakeUpPayload, type WakeUps } from './wake_ups.js'

/**
 * What a stop means for the turn it stops (LangGraph's cancel `action`): `keep` (what was said
 * stays in the conversation the next turn sees) or `rollback` (the stopped turn is left out of
 * it, and out of the chat's history; its rows stay stored).
 */
export type StopMode = 'keep' | 'rollback'

/** The stop modes, in one place (validation, config, docs). */
export const STOP_MODES: readonly StopMode[] = ['keep', 'rollback']

/** Whether `value` is a {@link StopMode}. */
export const isStopMode = (value: unknown): value is StopMode =>
  typeof value === 'string' && (STOP_MODES as readonly string[]).includes(value)

/** A stream as a stop sees it. */
export interface StopState {
  status: StreamStatus
  rev: number
  /** What the first stop asked, or `null` while nobody stopped the run. */
  stopMode: StopMode | null
  /** The running segment's record (JSON), or `null` when no segment runs. */
  segment: string | null
}

/**
 * A request to stop a run is a row change, never a frame: the stream's writer holds the stream
 * (only it appends), so the stop is recorded in the streams row (`stop_*`, see `stop_schema.ts`)
 * and the revision moves on, which wakes every replica's tail; the writer's replica reads the
 * mode and aborts its agent, which writes the `cancelled` end itself.
 */
export class StopRequests {
  constructor(
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames,
    readonly wakeUps: () => WakeUps
  ) {}

  /**
   * Record a stop of an open stream, once: the first stop's mode wins. The revision moves on and
   * the other replicas are woken in the same commit. Returns `'requested'` when this call
   * recorded it, else the state that refused it (`null`: no such stream).
   */
  async request(
    runId: string,
    mode: StopMode,
    by: string | null
  ): Promise<'requested' | StopState | null> {
    const client = this.connect()
    const wakeUps = this.wakeUps()
    const { channel } = wakeUps
    if (channel !== null) {
      return this.#requestNotified(client, { ...wakeUps, channel }, runId, mode, by)
    }
    return notifiedTransaction(client, wakeUps, async (trx, notify) => {
      const changed = await trx
        .from(this.tables.streams)
        .where('run_id', runId)
        .where('status', 'open')
        .whereNull('stop_mode')
        .update({
          ...stopColumns(mode, by),
          rev: trx.raw('rev + 1'),
          updated_at: now(),
        })
      if (affected(changed) === 0) return this.#state(trx, runId)
      // No revision in the wake-up (one read fewer before the commit): every replica that
      // follows the stream reads its row, the writer's replica its stop mode.
      await notify(runId)
      return 'requested' as const
    })
  }

  /**
   * {@link request} on PostgreSQL with NOTIFY: the update and its wake-up in ONE statement (its
   * NOTIFY delivered when it commits): one round trip before the agent's replica hears it.
   */
  async #requestNotified(
    client: QueryClientContract,
    wakeUps: WakeUps & { channel: string },
    runId: string,
    mode: StopMode,
    by: string | null
  ): Promise<'requested' | StopState | null> {
    const at = now()
    const result = await client.rawQuery(
      `with changed as (
         update ?? set stop_mode = ?, stop_requested_at = ?, stop_by = ${by === null ? 'null' : '?'},
           rev = rev + 1, updated_at = ?
         where run_id = ? and status = 'open' and stop_mode is null
         returning run_id)
       select pg_notify(?, ?) from changed`,
      [
        this.tables.streams,
        mode,
        at,
        ...(by === null ? [] : [by]),
        at,
        runId,
        wakeUps.channel,
        wakeUpPayload(runId),
      ]
    )
    if (result.rows.length === 0) return this.#state(client, runId)
    try {
      wakeUps.committed?.(runId)
    } catch {
      // Committed: a failing wake-up never makes the stop look failed (the poll covers it).
    }
    return 'requested'
  }

  /**
   * Record the mode of a stop that ended the run in another way (a parked run, cancelled):
   * `rollback` leaves its turn out of the conversation. Only the first stop's mode counts.
   */
  async record(
    runId: string,
    mode: StopMode,
    by: string | null,
    client: QueryClientContract = this.connect()
  ): Promise<void> {
    await client
      .from(this.tables.streams)
      .where('run_id', runId)
      .whereNull('stop_mode')
      .update(stopColumns(mode, by))
  }

  /**
   * Record a stop for an ended stream whose next segment is about to start (decided, not yet
   * resumed), only while it is still as read (`rev`): the resume's reopen moves the revision, so
   * a stop recorded here is always one the resumed segment finds at its first look. Resolves
   * whether it was recorded (else read the stream again).
   */
  async recordBeforeResume(
    runId: string,
    mode: StopMode,
    by: string | null,
    rev: number
  ): Promise<boolean> {
    const changed = await this.connect()
      .from(this.tables.streams)
      .where('run_id', runId)
      .whereNot('status', 'open')
      .whereNull('stop_mode')
      .where('rev', rev)
      .update(stopColumns(mode, by))
    return affected(changed) > 0
  }

  /**
   * Withdraw a stop that came too late, inside the transaction that ends the stream in another
   * way (the run finished, failed or parked on its own first): the end holds the stream's row
   * lock, so a stop either committed before it (withdrawn here: its caller reads the stream
   * again and answers as for a run that ended) or finds the stream ended. The stored end and the
   * stop's answer never disagree.
   */
  async withdraw(trx: QueryClientContract, runId: string): Promise<void> {
    await trx
      .from(this.tables.streams)
      .where('run_id', runId)
      .whereNotNull('stop_mode')
      .update(NO_STOP)
  }

  /**
   * Withdraw the stop of a stream its writer ended another way without going through the run
   * driver (a host's own writer: the driver withdraws in the end's transaction, `withdraw`).
   * Only an ended stream's.
   */
  async withdrawEnded(runId: string): Promise<void> {
    await this.connect()
      .from(this.tables.streams)
      .where('run_id', runId)
      .whereNot('status', 'open')
      .update(NO_STOP)
  }

  /** A stream as a stop sees it, or `null` when it does not exist. */
  state(runId: string): Promise<StopState | null> {
    return this.#state(this.connect(), runId)
  }

  /** The stop modes of several streams in one read (absent: no such stream, or no stop). */
  async modes(runIds: string[]): Promise<Map<string, { rev: number; stopMode: StopMode | null }>> {
    const found = new Map<string, { rev: number; stopMode: StopMode | null }>()
    if (runIds.length === 0) return found
    const rows = await this.connect()
      .from(this.tables.streams)
      .select('run_id', 'rev', 'stop_mode')
      .whereIn('run_id', runIds)
    for (const row of rows) {
      found.set(row.run_id, { rev: int(row.rev), stopMode: modeOf(row.stop_mode) })
    }
    return found
  }

  async #state(client: QueryClientContract, runId: string): Promise<StopState | null> {
    const row = await client
      .from(this.tables.streams)
      .select('status', 'rev', 'stop_mode', 'segment')
      .where('run_id', runId)
      .first()
    if (!row) return null
    return {
      status: row.status as StreamStatus,
      rev: int(row.rev),
      stopMode: modeOf(row.stop_mode),
      segment: (row.segment as string | null) ?? null,
    }
  }
}

/** The columns a stop records (`stop_schema.ts`). */
const stopColumns = (mode: StopMode, by: string | null) => ({
  stop_mode: mode,
  stop_requested_at: now(),
  stop_by: by,
})

/** The same columns once a stop is withdrawn. */
const NO_STOP = { stop_mode: null, stop_requested_at: null, stop_by: null }

/** A stored mode; anything else reads as none (a column edited by hand stops nothing). */
const modeOf = (value: unknown): StopMode | null => (isStopMode(value) ? value : null)

import { DEFAULTS } from '../defaults.js'
import type { QueryClientContract, TransactionClientContract } from '@adonisjs/lucid/types/database'
import { DateTime } from 'luxon'
import type { StreamFrame } from '../core/frames.js'
import type { RunMeta } from '../core/run.js'
import { InvalidFrameError } from '../errors.js'
import { affectedRows as affected, nowMs as now } from '../store/sql.js'
import { ITEM_KINDS, json, type ParkingTables } from './store_rows.js'

export type ParkFrame = Extract<StreamFrame, { t: 'approval' | 'elicitation' }>

/**
 * Parking a frame and the suspension's life before a decision: open (the segment is still
 * writing), parked (the segment ended with a checkpoint) or abandoned (it ended without one).
 */
export class SuspensionParks {
  constructor(readonly rows: ParkingTables) {}

  get #tables() {
    return this.rows.tables
  }

  /**
   * Park: insert the item's row and, when the parked run has no open suspension, a new one. Runs
   * inside the stream commit that stores the frame (invariant 6, docs/design.md). Returns the park
   * number (from 1, per parked run).
   * @throws InvalidFrameError (rule `maxItemsPerSegment`) when the segment already has
   *   `DEFAULTS.maxItemsPerSegment` items waiting (the commit rolls back: nothing is stored)
   */
  async park(
    trx: TransactionClientContract,
    meta: RunMeta,
    frame: ParkFrame,
    seq: number
  ): Promise<number> {
    if ((await this.#segmentItems(trx, meta.streamRunId)) >= DEFAULTS.maxItemsPerSegment) {
      // Every item of a segment is answered at once: past the cap, no one could answer them all.
      throw new InvalidFrameError([{ field: frame.t, rule: 'maxItemsPerSegment' }])
    }
    const at = now()
    const parkedRunId = frame.runId
    const latest = await trx
      .from(this.#tables.suspensions)
      .select('park', 'status')
      .where('run_id', parkedRunId)
      .orderBy('park', 'desc')
      .first()
    let park: number
    if (latest && latest.status === 'open') {
      park = Number(latest.park)
    } else {
      park = latest ? Number(latest.park) + 1 : 1
      const child = parkedRunId !== meta.runId
      await trx
        .insertQuery()
        .table(this.#tables.suspensions)
        .insert({
          run_id: parkedRunId,
          park,
          stream_run_id: meta.streamRunId,
          thread_id: meta.threadId,
          // A frame forwarded for another run: the writer's run is its parent.
          parent_run_id: child ? meta.runId : meta.parentRunId,
          principal: json(meta.principal),
          checkpoint: null,
          status: 'open',
          attempts: 0,
          created_at: at,
          updated_at: at,
        })
    }
    const common = {
      run_id: parkedRunId,
      park,
      item_id: frame.id,
      stream_run_id: meta.streamRunId,
      thread_id: meta.threadId,
      stream_seq: seq,
      approver: (frame.t === 'approval' ? frame.approver : undefined) ?? 'requester',
      principal: json(meta.principal),
      expires_at:
        frame.t === 'approval' && frame.expiresAt
          ? DateTime.fromISO(frame.expiresAt).toMillis()
          : null,
      status: 'pending',
      created_at: at,
    }
    if (frame.t === 'approval') {
      await trx
        .insertQuery()
        .table(this.#tables.approvals)
        .insert({
          ...common,
          tool_name: frame.toolName,
          input: json(frame.input ?? null),
          confirmation: json(frame.confirmation ?? null),
          target: json(frame.target ?? null),
        })
    } else {
      await trx
        .insertQuery()
        .table(this.#tables.elicitations)
        .insert({
          ...common,
          request: json(frame.request),
        })
    }
    return park
  }

  /**
   * Items of the stream waiting for an answer: those of the segment it is writing (an earlier
   * segment's are all settled before it resumed). Read through the items' stream index.
   */
  #segmentItems(trx: TransactionClientContract, streamRunId: string) {
    return this.rows.countPending(trx, { stream_run_id: streamRunId })
  }

  /** Whether the stream has suspensions being written (the segment wrote approvals/elicitations). */
  async hasOpen(streamRunId: string) {
    const row = await this.rows.client
      .from(this.#tables.suspensions)
      .select('run_id')
      .where('stream_run_id', streamRunId)
      .where('status', 'open')
      .first()
    return Boolean(row)
  }

  /**
   * The run ended a segment parked: store the checkpoint on the stream's open suspensions (every
   * run that parked in the segment), with `segmentRunId`, the run whose segment it was. They are
   * one segment from now on: resumed once, together, when none of their items is pending.
   */
  async parked(
    client: QueryClientContract | TransactionClientContract,
    streamRunId: string,
    checkpoint: unknown,
    input: unknown,
    segmentRunId: string
  ): Promise<{ runId: string; park: number }[]> {
    const open = await client
      .from(this.#tables.suspensions)
      .select('run_id', 'park')
      .where('stream_run_id', streamRunId)
      .where('status', 'open')
    if (open.length === 0) return []
    // By primary key: no range lock reaching another stream's rows (see `SuspensionClaims.claim`).
    for (const row of open) {
      await client
        .from(this.#tables.suspensions)
        .where('run_id', row.run_id)
        .where('park', row.park)
        .where('status', 'open')
        .update({
          status: 'parked',
          segment_run_id: segmentRunId,
          checkpoint: json(checkpoint ?? null),
          input: json(input ?? null),
          updated_at: now(),
        })
    }
    return open.map((row: { run_id: string; park: unknown }) => ({
      runId: row.run_id,
      park: Number(row.park),
    }))
  }

  /**
   * The run ended without parking: its open suspensions are abandoned, their items cancelled.
   * Returns the ids of the calls they asked approval for that will not run now (pending and
   * cancelled here, or approved while the segment still wrote), in stream order. A call someone
   * rejected (or that expired) meanwhile is not among them: that decision wrote its own denial.
   *
   * Safe to repeat after a failure (a database outage): each call is added to `calls` (the
   * caller's list, kept across attempts) as soon as it is known to be denied, so a retry after
   * some were already cancelled still returns theirs.
   */
  async abandon(streamRunId: string, calls: string[] = []): Promise<string[]> {
    const client = this.rows.client
    const open = await client
      .from(this.#tables.suspensions)
      .select('run_id', 'park')
      .where('stream_run_id', streamRunId)
      .where('status', 'open')
    const asked: { runId: string; park: number; id: string; seq: number; status: string }[] = []
    for (const row of open) {
      const rows = await client
        .from(this.#tables.approvals)
        .select('item_id', 'stream_seq', 'status')
        .where('run_id', row.run_id)
        .where('park', row.park)
        .whereIn('status', ['pending', 'approved'])
      for (const call of rows) {
        asked.push({
          runId: row.run_id,
          park: Number(row.park),
          id: call.item_id,
          seq: Number(call.stream_seq),
          status: call.status,
        })
      }
    }
    for (const call of asked.sort((a, b) => a.seq - b.seq)) {
      // Each pending call is cancelled on its own, if still pending: a decision committed since
      // the read wins, and only an approval (the call will not run now either) is denied here.
      const approval = () =>
        client
          .from(this.#tables.approvals)
          .where('run_id', call.runId)
          .where('park', call.park)
          .where('item_id', call.id)
      let denied = call.status === 'approved'
      if (!denied) {
        const update = { status: 'cancelled', decided_via: 'system', decided_at: now() }
        const won = affected(await approval().where('status', 'pending').update(update)) === 1
        const row = won ? null : await approval().select('status').first()
        denied = won || row?.status === 'approved'
      }
      if (denied && !calls.includes(call.id)) calls.push(call.id)
    }
    for (const row of open) {
      for (const kind of ITEM_KINDS) {
        await client
          .from(this.rows.items(kind))
          .where('run_id', row.run_id)
          .where('park', row.park)
          .where('status', 'pending')
          .update({ status: 'cancelled', decided_via: 'system', decided_at: now() })
      }
      await client
        .from(this.#tables.suspensions)
        .where('run_id', row.run_id)
        .where('park', row.park)
        .where('status', 'open')
        .update({ status: 'abandoned', updated_at: now() })
    }
    return calls
  }

  /**
   * Suspensions still `open` whose stream is no longer open: their segment died (a crash, a
   * lapsed lease) before it could park. They can never resume: abandon them. Returns how many
   * streams it abandoned.
   */
  async abandonOrphans(limit: number = DEFAULTS.sweepBatch) {
    const { streams, suspensions } = this.#tables
    const rows = await this.rows.client
      .from(suspensions)
      .select('stream_run_id')
      .where('status', 'open')
      .whereNotExists((q) =>
        q
          .from(streams)
          .whereRaw(`${streams}.run_id = ${suspensions}.stream_run_id`)
          .where(`${streams}.status`, 'open')
      )
      .limit(limit)
    const ids = [...new Set(rows.map((row: { stream_run_id: string }) => row.stream_run_id))]
    for (const id of ids) await this.abandon(id as string)
    return ids.length
  }
}

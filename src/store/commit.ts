import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { LeaseLostError, StreamClosedError } from '../errors.js'
import type { TableNames } from './schema.js'
import { affectedRows as affected, nowMs as now } from './sql.js'
import { frameRecord, APPENDED_END, int, toStoredRow, toStreamState, type NewRow } from './rows.js'
import type { AppendPlan, CommitResult, NumberedRow } from './append_plan.js'

/** What the commit transaction needs of its store. */
export interface CommitContext {
  tables: TableNames
  /** Lucid's dialect name (`mysql` appends text with `CONCAT`). */
  dialect: string
  /** Wake other replicas on commit (PostgreSQL NOTIFY in the transaction; a no-op elsewhere). */
  notify: (trx: TransactionClientContract, runId: string, rev?: number) => Promise<void>
}

/**
 * One append, inside `trx`: lock the stream row, allocate seqs, grow or insert the held text,
 * let `plan.stamp` finish the rows, insert them (`rows`: the plan's, see `planRows`), supersede
 * replaced components, run `plan.within`, renew the lease, notify. The stream's row lock
 * serializes writers of one stream across processes, so seqs are gap-free and commit in seq
 * order. Every row written carries `plan.token`; with `plan.retried`, an earlier attempt that
 * stored rows with that token is returned instead (`landed`), and nothing is written again.
 *
 * @returns what was written; `null` only with `onlyIfLeaseLapsed` when the lease had not lapsed
 * @throws StreamClosedError when the stream is not open (ended, failed or purged; with
 *   `evenIfClosed`, only when it does not exist); nothing is written then
 */
export async function commitInTransaction(
  trx: TransactionClientContract,
  ctx: CommitContext,
  runId: string,
  plan: AppendPlan,
  rows: NewRow[]
): Promise<CommitResult | null> {
  const at = now()
  if (plan.token && plan.retried) {
    const landed = await landedAttempt(trx, ctx.tables, runId, plan, at)
    if (landed) {
      // The earlier attempt's COMMIT was not confirmed, so nothing was published for it after
      // commit (Redis): wake readers now (no rev: they read). A second NOTIFY is harmless.
      await ctx.notify(trx, runId)
      return landed
    }
  }
  const lock = trx.knexQuery().table(ctx.tables.streams).where('run_id', runId)
  if (!plan.evenIfClosed) lock.where('status', 'open')
  if (plan.onlyIfLeaseLapsed) lock.where('lease_expires_at', '<', at)
  // A writer's append only while it holds the stream (fencing); a takeover only of a segment
  // recorded as running, and it moves the epoch on: the first claimer wins.
  if (plan.epoch !== undefined) lock.where('writer_epoch', plan.epoch)
  if (plan.takeOver) lock.whereNotNull('segment')
  // How many rows this commit inserts when that is known before the head is read: their seqs
  // are then allocated by the locking UPDATE itself (no second UPDATE of the head).
  const counted = rowsKnown(plan, rows)
  const raw = (sql: string, bindings: unknown[] = []) => trx.knexRawQuery(sql, bindings as any[])
  const values = {
    rev: raw('rev + 1'),
    updated_at: at,
    ...(plan.leaseMs && !plan.end ? { lease_expires_at: at + plan.leaseMs } : {}),
    ...(plan.takeOver ? { writer_epoch: raw('writer_epoch + 1') } : {}),
    ...(counted ? { last_seq: raw('last_seq + ?', [counted]) } : {}),
  }
  let streamRow: Record<string, unknown> | undefined
  if (ctx.dialect === 'mysql') {
    const touched = await lock.update(values)
    if (affected(touched) > 0) {
      streamRow = await trx.from(ctx.tables.streams).where('run_id', runId).first()
    }
  } else {
    // PostgreSQL and SQLite return the locked row from the UPDATE: no read after it.
    const updated = await lock.update(values, ['*'])
    streamRow = (updated as Record<string, unknown>[])[0]
  }
  if (!streamRow) {
    if (plan.onlyIfLeaseLapsed) return null
    if (plan.epoch !== undefined) await assertEpoch(trx, ctx.tables, runId, plan.epoch)
    throw new StreamClosedError(runId)
  }
  const head = toStreamState(streamRow)
  const before = head.lastSeq - counted
  let next = before
  const result: CommitResult = { before, rev: head.rev, rows: [] }
  if (plan.takeOver) result.epoch = int(streamRow.writer_epoch)
  const inserts: NumberedRow[] = []

  if (plan.text && plan.text.text.length > 0) {
    const { seq, prefix, text } = plan.text
    if (seq !== null && seq === before) {
      // Appended in SQL: the row is not rewritten whole at every flush.
      const append =
        ctx.dialect === 'mysql' ? trx.raw('CONCAT(body, ?)', [text]) : trx.raw('body || ?', [text])
      await trx
        .from(ctx.tables.frames)
        .where('run_id', runId)
        .where('seq', seq)
        .update({ body: append, ...(plan.token ? { commit_token: plan.token } : {}) })
      result.grown = { seq, from: prefix.length, body: prefix + text }
    } else {
      inserts.push({ seq: ++next, kind: 'text', body: text })
    }
  }
  for (const row of rows) inserts.push({ ...row, seq: ++next })
  const closed = head.status !== 'open'
  // Frames appended to an ended stream (a decision's) are followed by an end marker again, so
  // readers still find it ended; its body tells doors it ends no segment.
  if (closed && inserts.length > 0) inserts.push({ kind: 'end', body: APPENDED_END, seq: ++next })
  // What only this commit knows (the park an approval joined) goes into the rows before they
  // are inserted: each is written once.
  await plan.stamp?.(trx, inserts)

  if (inserts.length > 0) {
    await trx
      .insertQuery()
      .table(ctx.tables.frames)
      .multiInsert(inserts.map((row) => frameRecord(runId, row, plan.token, at)))
    await supersede(trx, ctx.tables, runId, inserts)
  }

  const stored = inserts.map((row) => ({
    seq: row.seq,
    kind: row.kind,
    body: row.body,
    componentId: row.componentId ?? null,
    superseded: false,
  }))
  await plan.within?.(trx, stored)

  const update: Record<string, unknown> = {}
  if (next !== head.lastSeq) update.last_seq = next
  if (closed && next !== before) update.ended_at = at
  if (plan.end) {
    update.status = plan.end
    update.ended_at = at
    update.lease_expires_at = null
    // No segment runs any more: nothing to continue.
    update.segment = null
  }
  if (Object.keys(update).length > 0) {
    await trx.from(ctx.tables.streams).where('run_id', runId).update(update)
  }
  await ctx.notify(trx, runId, result.rev)
  result.rows = stored
  // A component superseded by a later one of this same commit.
  const lastOf = new Map<string, number>()
  for (const row of result.rows) if (row.componentId) lastOf.set(row.componentId, row.seq)
  for (const row of result.rows) {
    if (row.componentId && lastOf.get(row.componentId) !== row.seq) row.superseded = true
  }
  return result
}

/**
 * The rows a commit inserts, when known before its stream's head is read (0 when not, or none):
 * held text that starts a new row (a message's first text, a full row's successor) and the
 * plan's rows, on a stream that must be open (no end marker after them). Text that may grow the
 * last row depends on the head: not known.
 */
function rowsKnown(plan: AppendPlan, rows: NewRow[]): number {
  if (plan.evenIfClosed) return 0
  const text = plan.text && plan.text.text.length > 0 ? plan.text : null
  if (text && text.seq !== null) return 0
  return (text ? 1 : 0) + rows.length
}

/**
 * Throw {@link LeaseLostError} when the stream's writer epoch moved past `epoch`: another
 * replica took the stream over (the append was refused for that, not for a closed stream).
 */
export async function assertEpoch(
  trx: TransactionClientContract,
  tables: TableNames,
  runId: string,
  epoch: number
) {
  const row = await trx.from(tables.streams).select('writer_epoch').where('run_id', runId).first()
  if (row && int(row.writer_epoch) !== epoch) throw new LeaseLostError(runId)
}

/**
 * The result of an earlier attempt of this commit (`plan.token`) when it landed, else `null`.
 * The stream row is locked first, so an attempt still finishing on a connection the client gave
 * up on is waited for, never raced. Its rows are exactly the token's (a transaction is all or
 * nothing); the first is the text row it grew when that is the writer's row.
 */
async function landedAttempt(
  trx: TransactionClientContract,
  tables: TableNames,
  runId: string,
  plan: AppendPlan,
  at: number
): Promise<CommitResult | null> {
  // Whatever the status: an attempt that landed with an end marker closed the stream. (Rows
  // matched are locked even when the update changes nothing, so its count is not looked at.)
  await trx.from(tables.streams).where('run_id', runId).update({ updated_at: at })
  const rows = await trx
    .from(tables.frames)
    .select('seq', 'kind', 'body', 'component_id', 'superseded')
    .where('run_id', runId)
    .where('seq', '>=', plan.sinceSeq ?? 1)
    .where('commit_token', plan.token!)
    .orderBy('seq', 'asc')
  if (rows.length === 0) return null
  const stored = rows.map(toStoredRow)
  const grownSeq = plan.text?.seq ?? null
  const result: CommitResult = { before: 0, rev: -1, rows: stored, landed: true }
  if (grownSeq !== null && stored[0].seq === grownSeq && stored[0].kind === 'text') {
    const grown = stored.shift()!
    result.grown = { seq: grown.seq, from: plan.text!.prefix.length, body: grown.body }
  }
  result.before = stored.length > 0 ? stored[0].seq - 1 : result.grown!.seq
  return result
}

/** Mark older components with the same id as superseded (exact primary keys: no range locks). */
async function supersede(
  trx: TransactionClientContract,
  tables: TableNames,
  runId: string,
  inserts: { seq: number; componentId?: string | null }[]
) {
  const ids = [...new Set(inserts.map((row) => row.componentId).filter((id): id is string => !!id))]
  if (ids.length === 0) return
  const firstNew = inserts[0].seq
  const older = await trx
    .from(tables.frames)
    .select('seq', 'component_id')
    .where('run_id', runId)
    .whereIn('component_id', ids)
    .where('superseded', false)
  const lastOf = new Map<string, number>()
  for (const row of inserts) if (row.componentId) lastOf.set(row.componentId, row.seq)
  const stale = older
    .filter((row: { seq: unknown; component_id: string }) => {
      const seq = int(row.seq)
      return seq < firstNew || seq !== lastOf.get(row.component_id)
    })
    .map((row: { seq: unknown }) => int(row.seq))
  if (stale.length === 0) return
  await trx
    .from(tables.frames)
    .where('run_id', runId)
    .whereIn('seq', stale)
    .update({ superseded: true })
}

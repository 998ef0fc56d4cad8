import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import { LeaseLostError, StreamClosedError } from '../errors.js'
import type { TableNames } from './schema.js'
import { nowMs as now } from './sql.js'
import {
  frameRecord,
  int,
  toStreamState,
  type NewRow,
  type StoredRow,
  type StreamState,
} from './rows.js'
import type { AppendPlan, CommitResult, NumberedRow } from './append_plan.js'

/** What the group's transaction needs of its store. */
export interface GroupContext {
  tables: TableNames
  /** Lucid's dialect name (`mysql` appends text with `CONCAT`). */
  dialect: string
  /** Wake other replicas for every stream committed (PostgreSQL NOTIFY in the transaction). */
  notify: (trx: TransactionClientContract, commits: [runId: string, rev: number][]) => Promise<void>
}

/** One stream's append in a group: a plan {@link groupable} accepts, and its rows (`planRows`). */
export interface GroupMember {
  runId: string
  plan: AppendPlan
  rows: NewRow[]
}

/** One member's outcome: what was written, or why nothing was (its stream is not open). */
export type GroupOutcome = { result: CommitResult } | { error: Error }

/**
 * Whether a plan, with its `rows`, can ride in a group: a plain append (held text, rows, an end
 * marker, a lease renewal). Plans that need the stream to themselves go alone: code inside the
 * transaction (`stamp`, `within`), a retry's look-up of an earlier attempt, a lease check, an
 * append to a closed stream, and components (their supersede pass).
 */
export function groupable(plan: AppendPlan, rows: NewRow[]): boolean {
  return (
    !plan.stamp &&
    !plan.within &&
    !plan.retried &&
    !plan.onlyIfLeaseLapsed &&
    !plan.takeOver &&
    !plan.evenIfClosed &&
    rows.every((row) => !row.componentId)
  )
}

/**
 * Several streams' commits in ONE transaction, `trx`, in a fixed number of statements whatever
 * the number of members (group commit): lock every member's stream row, read their heads, grow
 * their text rows (one UPDATE), insert their new rows (one INSERT), move their heads (one
 * UPDATE), notify. Each stream keeps its own rules: its seqs are allocated under its row lock,
 * gap-free, after its last seq, in commit order; each row carries its member's `plan.token`, so
 * a retry of a member finds out whether the group landed. A member whose stream is not open
 * gets `StreamClosedError` and writes nothing; the others commit.
 *
 * Members must name distinct streams and pass {@link groupable}.
 *
 * @returns one outcome per member, in the members' order
 */
export async function commitGroupInTransaction(
  trx: TransactionClientContract,
  ctx: GroupContext,
  members: GroupMember[]
): Promise<GroupOutcome[]> {
  const { streams, frames } = ctx.tables
  const at = now()
  const ids = members.map((member) => member.runId)
  // Lock every member's row, whatever its status (a matched row is locked even when the update
  // changes nothing; SQLite takes its write lock): its status is then read as it will stay.
  await trx
    .from(streams)
    .whereIn('run_id', ids)
    .update({ rev: trx.raw('rev') })
  const heads = new Map<string, StreamState>()
  const epochs = new Map<string, number>()
  for (const row of await trx
    .from(streams)
    .select('run_id', 'last_seq', 'rev', 'status', 'lease_expires_at', 'created_at', 'writer_epoch')
    .whereIn('run_id', ids)) {
    heads.set(row.run_id, toStreamState(row))
    epochs.set(row.run_id, int(row.writer_epoch))
  }

  const outcomes: GroupOutcome[] = []
  const grows: { runId: string; seq: number; text: string; token?: string }[] = []
  const inserts: (NumberedRow & { runId: string; token?: string })[] = []
  const moved: { runId: string; lastSeq?: number; plan: AppendPlan }[] = []
  const notified: [string, number][] = []
  for (const { runId, plan, rows } of members) {
    const head = heads.get(runId)
    // A writer whose stream another replica took over writes nothing more (fencing).
    if (head && plan.epoch !== undefined && epochs.get(runId) !== plan.epoch) {
      outcomes.push({ error: new LeaseLostError(runId) })
      continue
    }
    if (!head || head.status !== 'open') {
      outcomes.push({ error: new StreamClosedError(runId) })
      continue
    }
    const before = head.lastSeq
    let next = before
    const result: CommitResult = { before, rev: head.rev + 1, rows: [] }
    const mine: NumberedRow[] = []
    if (plan.text && plan.text.text.length > 0) {
      const { seq, prefix, text } = plan.text
      if (seq !== null && seq === before) {
        grows.push({ runId, seq, text, token: plan.token })
        result.grown = { seq, from: prefix.length, body: prefix + text }
      } else {
        mine.push({ seq: ++next, kind: 'text', body: text })
      }
    }
    for (const row of rows) mine.push({ ...row, seq: ++next })
    for (const row of mine) inserts.push({ ...row, runId, token: plan.token })
    result.rows = mine.map((row) => ({
      seq: row.seq,
      kind: row.kind,
      body: row.body,
      componentId: row.componentId ?? null,
      superseded: false,
    })) satisfies StoredRow[]
    moved.push({ runId, lastSeq: next !== before ? next : undefined, plan })
    notified.push([runId, result.rev])
    outcomes.push({ result })
  }

  if (grows.length > 0) await growTexts(trx, ctx, grows)
  if (inserts.length > 0) {
    await trx
      .insertQuery()
      .table(frames)
      .multiInsert(inserts.map((row) => frameRecord(row.runId, row, row.token, at)))
  }
  if (moved.length > 0) await moveHeads(trx, ctx, moved, at)
  if (notified.length > 0) await ctx.notify(trx, notified)
  return outcomes
}

type Value = string | number | null

/** `CASE run_id WHEN ? THEN ? ... ELSE <otherwise> END`, with its bindings (`null` inline). */
function byRun(entries: [string, Value][], otherwise: string) {
  const whens = entries.map(([, value]) => (value === null ? 'when ? then null' : 'when ? then ?'))
  return {
    sql: `case run_id ${whens.join(' ')} else ${otherwise} end`,
    bindings: entries.flatMap(([runId, value]) => (value === null ? [runId] : [runId, value])),
  }
}

/** Append each member's text to its own text row, in SQL (rows are not rewritten whole). */
async function growTexts(
  trx: TransactionClientContract,
  ctx: GroupContext,
  grows: { runId: string; seq: number; text: string; token?: string }[]
) {
  const text = byRun(
    grows.map((grow) => [grow.runId, grow.text]),
    "''"
  )
  const body =
    ctx.dialect === 'mysql'
      ? trx.raw(`CONCAT(body, ${text.sql})`, text.bindings)
      : trx.raw(`body || ${text.sql}`, text.bindings)
  const tokens = grows.filter((grow) => grow.token)
  const token = byRun(
    tokens.map((grow) => [grow.runId, grow.token!]),
    'commit_token'
  )
  await trx
    .from(ctx.tables.frames)
    .where((query) => {
      // Exact primary keys: no range locks, and each stream's own row only.
      for (const grow of grows) {
        query.orWhere((one) => one.where('run_id', grow.runId).where('seq', grow.seq))
      }
    })
    .update({
      body,
      ...(tokens.length > 0 ? { commit_token: trx.raw(token.sql, token.bindings) } : {}),
    })
}

/** Bump each member's rev, move its last seq, renew its lease or end it: one UPDATE. */
async function moveHeads(
  trx: TransactionClientContract,
  ctx: GroupContext,
  moved: { runId: string; lastSeq?: number; plan: AppendPlan }[],
  at: number
) {
  const update: Record<string, unknown> = { rev: trx.raw('rev + 1'), updated_at: at }
  const column = (name: string, entries: [string, Value][]) => {
    if (entries.length === 0) return
    const value = byRun(entries, name)
    update[name] = trx.raw(value.sql, value.bindings)
  }
  column(
    'last_seq',
    moved.filter((m) => m.lastSeq !== undefined).map((m) => [m.runId, m.lastSeq!])
  )
  const ended = moved.filter((m) => m.plan.end)
  column(
    'status',
    ended.map((m) => [m.runId, m.plan.end!])
  )
  column(
    'ended_at',
    ended.map((m) => [m.runId, at])
  )
  column(
    'segment',
    ended.map((m) => [m.runId, null])
  )
  // An ended stream has no lease; an open one is renewed when its writer asked.
  column('lease_expires_at', [
    ...ended.map((m): [string, Value] => [m.runId, null]),
    ...moved
      .filter((m) => !m.plan.end && m.plan.leaseMs)
      .map((m): [string, Value] => [m.runId, at + m.plan.leaseMs!]),
  ])
  await trx
    .from(ctx.tables.streams)
    .whereIn(
      'run_id',
      moved.map((m) => m.runId)
    )
    .update(update)
}

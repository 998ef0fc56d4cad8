import type { Principal } from '../../core/run.js'
import { itemDecision, ownerOf, planBatch, type DoorDecision } from '../../door/index.js'
import type { DecisionPlan, ItemDecision, ParkedItem } from '../../parking/index.js'
import { lapsed } from '../../parking/policy.js'
import { validateDecision, validateReply } from '../../parking/replies.js'
import { continuationRunId, decodeAgUiId, encodeAgUiId } from '../ids.js'
import { replyCheck } from './reply_check.js'
import type { AgUiInput, AgUiResumeEntry } from './input.js'
import type { AgentState } from '../../core/agent_state.js'
import { issueOf, refusal, refusalOf, type AgUiRefusalCode } from './refusals.js'
import type { AgUiDeps, AgUiReply } from './reply.js'
import type { DoorRun } from '../../store/door_runs.js'
import { serveRun } from './serve.js'

interface Planned {
  item: ParkedItem
  entry: AgUiResumeEntry
  /** The reply, validated, as parking's decisions take it. */
  decision: ItemDecision
}

/** The id the translator gave this item's interrupt (same grammar, same stored position). */
export function interruptId(item: ParkedItem) {
  return encodeAgUiId({
    runId: item.streamRunId,
    kind: 'int',
    n: item.streamSeq,
    address: [item.runId, item.itemId],
  })
}

/**
 * A resume (AG-UI interrupts rules 1-8): every rule is checked first (nothing written), then the
 * run is recorded and the answers applied; the continuation is served as a new AG-UI run.
 *
 * `reused`: the input names the interrupted run's own id (CopilotKit's `useInterrupt`
 * resolve() does, CopilotKit issue #6999). The continuation is then recorded, and announced in
 * its `RUN_STARTED`, under the id the door gives the continuation of that park
 * (`continuationRunId`, the one an admin decision's continuation gets too): a re-attach by the
 * interrupted run's id still serves the interrupted run, by the new id the continuation.
 */
export async function resume(
  deps: AgUiDeps,
  input: AgUiInput,
  state: AgentState | undefined,
  hash: string,
  latest: DoorRun,
  pending: ParkedItem[],
  principal: Principal | null,
  signal?: AbortSignal,
  reused = false
): Promise<AgUiReply> {
  const byId = new Map(pending.map((item) => [interruptId(item), item]))
  const seen = new Set<string>()
  const plan: Planned[] = []
  for (const entry of input.resume!) {
    if (seen.has(entry.interruptId)) return refusal('duplicate_interrupt')
    seen.add(entry.interruptId)
    const item = byId.get(entry.interruptId)
    if (!item) {
      const settled = await settledElsewhere(deps, input.threadId, [entry])
      return refusal(settledRefusal(settled, 'unknown_interrupt'))
    }
    const planned = await planEntry(deps, item, entry, principal)
    if (typeof planned === 'string') return refusal(planned)
    plan.push(planned)
  }
  if (seen.size !== byId.size) return refusal('incomplete_resume')
  // The whole batch checked by parking's decisions (who decides, expiry, every edited input
  // against its tool's schema) before anything is written; applied below in one transaction.
  let decisions: DecisionPlan
  try {
    decisions = await planBatch(
      deps,
      plan.map((step) => step.decision),
      principal,
      // The page's state sent with the resume (checked by the door before anything was
      // written): the resumed segment's `ctx.input.state`.
      state
    )
  } catch (error) {
    const code = refusalOf(error)
    if (code) return refusal(code, issueOf(error))
    throw error
  }
  const lastAsked = Math.max(...pending.map((item) => item.streamSeq))
  const afterSeq = await deps.sink.segmentEnd(latest.streamRunId, lastAsked)
  if (afterSeq === null) return refusal('run_active')
  const run: Omit<DoorRun, 'createdAt'> = {
    runId: reused ? continuationRunId(latest.streamRunId, afterSeq) : input.runId,
    threadId: input.threadId,
    streamRunId: latest.streamRunId,
    afterSeq,
    kind: 'resume',
    resumeHash: hash,
    ownerId: ownerOf(principal),
    clientTools: latest.clientTools,
  }
  if (!(await deps.runs.insert(run))) return refusal('run_id_used')
  try {
    // Every answer in one transaction, or none.
    await decisions.commit()
  } catch (error) {
    // Only a race gets here (every rule was checked): someone decided first. Nothing of the
    // resume was applied: its run row goes too.
    await deps.runs.remove(run.runId)
    const code = refusalOf(error)
    if (code) return refusal(code)
    throw error
  }
  return serveRun(deps, { ...run, createdAt: 0 }, undefined, signal)
}

/** Validate one resume entry against its item; a refusal code, or how to apply it. */
async function planEntry(
  deps: AgUiDeps,
  item: ParkedItem,
  entry: AgUiResumeEntry,
  principal: Principal | null
): Promise<Planned | AgUiRefusalCode> {
  const stored = await deps.parking.queries.findItem(item.runId, item.itemId, item.park)
  if (!stored || !(await deps.parking.decisions.mayDecide(principal, stored))) return 'not_allowed'
  const ref = { runId: item.runId, itemId: item.itemId, park: item.park }
  const decide = (decision: DoorDecision) => itemDecision(ref, decision)
  const cancelled = entry.status === 'cancelled'
  const expired = lapsed(stored)
  if (expired && !cancelled) return 'interrupt_expired'
  // A lapsed item cancelled: it settles as expired, as the sweeper would settle it.
  if (expired) return { item, entry, decision: decide({ verb: 'expire' }) }
  if (item.kind === 'elicitation') {
    let reply: { answers: Record<string, string[]>; skipped: boolean }
    try {
      if (!cancelled && !replyCheck.questionSet(item.request!, entry.payload)) {
        return 'invalid_resume_payload'
      }
      reply = cancelled
        ? { answers: {}, skipped: true }
        : await validateReply(entry.payload, item.request!)
    } catch {
      return 'invalid_resume_payload'
    }
    return { item, entry, decision: decide({ verb: 'answer', body: reply }) }
  }
  if (cancelled) {
    return { item, entry, decision: decide({ verb: 'reject', body: { reason: 'cancelled' } }) }
  }
  const decision = replyCheck.approval(entry.payload)
  if (!decision) return 'invalid_resume_payload'
  try {
    await validateDecision({ reason: decision.reason, input: decision.editedArgs })
  } catch {
    return 'invalid_resume_payload'
  }
  const body = {
    ...(decision.reason ? { reason: decision.reason } : {}),
    ...(decision.approved && decision.editedArgs ? { input: decision.editedArgs } : {}),
  }
  const verb = decision.approved ? 'approve' : 'reject'
  return { item, entry, decision: decide({ verb, body }) }
}

/**
 * Whether every entry names an interrupt of this thread that was already settled elsewhere: all
 * decided (the admin page, the decision API, another tab: the client should follow the run, not
 * answer again), or cancelled with its run (which will not continue). `null` when one is
 * pending, unknown or another thread's.
 */
export async function settledElsewhere(
  deps: AgUiDeps,
  threadId: string,
  entries: AgUiResumeEntry[]
): Promise<'decided' | 'cancelled' | null> {
  let cancelled = false
  for (const entry of entries) {
    const parts = decodeAgUiId(entry.interruptId)
    if (!parts || parts.kind !== 'int' || parts.address.length !== 2) return null
    const [runId, itemId] = parts.address
    // The interrupt's own park (its frame's position), not the newest park of a reused id.
    const rows = await deps.parking.queries.findItems(runId, itemId)
    const item = rows.find((row) => row.streamRunId === parts.runId && row.streamSeq === parts.n)
    if (!item || item.threadId !== threadId || item.status === 'pending') return null
    if (item.status === 'cancelled') cancelled = true
  }
  if (entries.length === 0) return null
  return cancelled ? 'cancelled' : 'decided'
}

/** The refusal for entries {@link settledElsewhere} found settled, else `fallback`. */
export function settledRefusal(
  settled: 'decided' | 'cancelled' | null,
  fallback: AgUiRefusalCode
): AgUiRefusalCode {
  if (settled === 'cancelled') return 'interrupt_cancelled'
  return settled === 'decided' ? 'interrupt_decided' : fallback
}

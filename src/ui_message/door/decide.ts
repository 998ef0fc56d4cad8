import type { Principal } from '../../core/run.js'
import type { AgentState } from '../../core/agent_state.js'
import { DEFAULTS } from '../../defaults.js'
import { applyDecisions, itemDecision } from '../../door/index.js'
import { positionOf } from '../../sink/read_path.js'
import { ParkedItemNotFoundError } from '../../errors.js'
import type { ItemDecision, ParkedItem } from '../../parking/index.js'
import { approvalSeq } from '../translate/index.js'
import { CHAT_LIMITS, invalidPart, type ChatMessage } from './input.js'
import type { UiDoorDeps } from './reply.js'

/**
 * One ask of the current turn that the client's assistant message names, resolved to its parked
 * item: with the decision it carries (`decision`), or none (the page still shows the ask).
 */
export interface PlannedDecision {
  /** The row of the frame that asked (where the door serves the continuation from). */
  seq: number
  decision?: ItemDecision
}

type Part = Record<string, unknown>

const isToolPart = (part: Part) =>
  typeof part.type === 'string' && (part.type.startsWith('tool-') || part.type === 'dynamic-tool')

/**
 * The asks of the current turn in the client's last assistant message, each resolved to the
 * parked item it names, before anything is written:
 * - a tool part in state `approval-responded` (`addToolApprovalResponse`): its `approval.id` is
 *   the door's `approval-<seq>`; the `approval` frame stored at that row names the item (its
 *   run, id and park), decided with `approve` / `reject` of parking's decisions (`via: 'chat'`);
 *   in state `approval-requested` (not answered on this page): the same item, nothing to apply;
 * - the dynamic tool `elicitation` in state `output-available` (`addToolOutput`) for a question
 *   set still pending: `answer` with the output (`{ answers, skipped? }`); for one answered
 *   already (elsewhere, or earlier in the turn), nothing to apply (its answers are in the stream).
 * Parking's decisions enforce the rest, for the whole message before any is applied (lapsed:
 * 410; not the approver: 403; no such item: 404; a body that does not fit, or one item decided
 * twice: 422), exactly as for the other doors; an item settled first is not an error of the
 * chat ({@link applyPlan}).
 *
 * @throws InvalidAgUiInputError for a part that breaks the protocol's shape,
 *   ParkedItemNotFoundError for an approval id naming no approval of this stream
 */
export async function planDecisions(
  deps: UiDoorDeps,
  streamRunId: string,
  message: ChatMessage,
  pending: ParkedItem[]
): Promise<PlannedDecision[]> {
  const plan: PlannedDecision[] = []
  for (const raw of message.parts as unknown[]) {
    if (!raw || typeof raw !== 'object') continue
    const part = raw as Part
    if (!isToolPart(part)) continue
    const answered = part.state === 'approval-responded'
    if (answered || part.state === 'approval-requested') {
      const approval = part.approval as Part | undefined
      if (!approval || typeof approval !== 'object') throw invalidPart('approval', 'object')
      if (answered && typeof approval.approved !== 'boolean')
        throw invalidPart('approval.approved', 'boolean')
      const reason = approval.reason
      if (
        answered &&
        reason !== undefined &&
        (typeof reason !== 'string' || reason.length > CHAT_LIMITS.reasonChars)
      )
        throw invalidPart('approval.reason', 'string')
      const seq = approvalSeq(approval.id)
      if (seq === null) throw new ParkedItemNotFoundError()
      const frame = await approvalAt(deps, streamRunId, seq)
      if (!frame) throw new ParkedItemNotFoundError()
      if (!answered) {
        plan.push({ seq })
        continue
      }
      const body = reason ? { reason: reason as string } : {}
      const verb = approval.approved ? 'approve' : 'reject'
      const ref = { runId: frame.runId, itemId: frame.id, park: frame.park }
      plan.push({ seq, decision: itemDecision(ref, { verb, body }) })
    } else if (part.type === 'dynamic-tool' && part.toolName === 'elicitation') {
      const open = part.state === 'input-available'
      if (!open && part.state !== 'output-available') continue
      const item = pending.find((p) => p.kind === 'elicitation' && p.itemId === part.toolCallId)
      if (item && open) {
        plan.push({ seq: item.streamSeq })
        continue
      }
      if (item) {
        const output = part.output
        if (!output || typeof output !== 'object' || Array.isArray(output))
          throw invalidPart('output', 'object')
        const body = output as Record<string, unknown>
        plan.push({ seq: item.streamSeq, decision: itemDecision(item, { verb: 'answer', body }) })
        continue
      }
      // Answered first elsewhere: nothing to apply, its answers are in the stream.
      const first = await settledQuestions(deps, streamRunId, part.toolCallId)
      if (first) plan.push({ seq: first.streamSeq })
    }
  }
  return plan
}

/**
 * Apply the message's decisions, all of them at once (parking's batch: every one checked
 * before any is applied, then one transaction). A decision whose item was settled first (by
 * the admin page, another tab, the decision API, its expiry) is left out, not an error: its
 * outcome is already in the stream, where the continuation the door serves shows it. Any other
 * refusal is thrown, and nothing of the message was applied. `pageState` (the body's `state`,
 * checked) is the resumed segment's `ctx.input.state`.
 */
export function applyPlan(
  deps: UiDoorDeps,
  plan: PlannedDecision[],
  principal: Principal | null,
  pageState?: AgentState
) {
  const decisions = plan.flatMap((step) => (step.decision ? [step.decision] : []))
  return applyDecisions(deps, decisions, principal, pageState)
}

/** The newest settled question set `itemId` of the stream, or undefined. */
async function settledQuestions(deps: UiDoorDeps, streamRunId: string, itemId: unknown) {
  if (typeof itemId !== 'string') return undefined
  const decided = await deps.parking.queries.list({
    status: 'decided',
    streamRunId,
    perPage: DEFAULTS.parkedPerPageMax,
  })
  return decided.find((p) => p.kind === 'elicitation' && p.itemId === itemId)
}

/** The item the `approval` frame stored at row `seq` of the stream names, or `null`. */
async function approvalAt(deps: UiDoorDeps, streamRunId: string, seq: number) {
  for await (const item of deps.sink.replay(streamRunId, {
    after: { seq: seq - 1 },
    until: { seq },
  })) {
    if (positionOf(item).seq !== seq) return null
    if (item.t !== 'approval' || typeof item.park !== 'number') return null
    return { runId: item.runId, id: item.id, park: item.park }
  }
  return null
}

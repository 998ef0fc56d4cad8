import { parseCursor } from '../../core/cursor.js'
import type { Principal } from '../../core/run.js'
import { ParkedItemNotFoundError } from '../../errors.js'
import type { PendingItem } from '../../parking/types.js'
import { approvalSeq } from '../translate/index.js'
import { CHAT_LIMITS, invalidPart, type ChatMessage } from './input.js'
import type { UiDoorDeps } from './reply.js'

/** One decision the client's assistant message carries, resolved to its parked item. */
export interface PlannedDecision {
  /** The row of the frame that asked (where the door serves the continuation from). */
  seq: number
  apply: () => Promise<unknown>
}

type Part = Record<string, unknown>

const isToolPart = (part: Part) =>
  typeof part.type === 'string' && (part.type.startsWith('tool-') || part.type === 'dynamic-tool')

/**
 * The decisions in the client's last assistant message, each resolved to the parked item it
 * answers, before anything is written:
 * - a tool part in state `approval-responded` (`addToolApprovalResponse`): its `approval.id` is
 *   the door's `approval-<seq>`; the `approval` frame stored at that row names the item (its
 *   run, id and park), decided with `approve` / `reject` of the parking service (`via: 'chat'`);
 * - the dynamic tool `elicitation` in state `output-available` (`addToolOutput`) for a question
 *   set still pending: `answer` with the output (`{ answers, skipped? }`).
 * The parking service enforces the rest (decide once: 409; lapsed: 410; not the approver: 403;
 * no such item: 404; a body that does not fit: 422), exactly as for the other doors.
 *
 * @throws InvalidAgUiInputError for a part that breaks the protocol's shape,
 *   ParkedItemNotFoundError for an approval id naming no approval of this stream
 */
export async function planDecisions(
  deps: UiDoorDeps,
  streamRunId: string,
  message: ChatMessage,
  pending: PendingItem[],
  principal: Principal | null
): Promise<PlannedDecision[]> {
  const decider = { principal, via: 'chat' }
  const plan: PlannedDecision[] = []
  for (const raw of message.parts as unknown[]) {
    if (!raw || typeof raw !== 'object') continue
    const part = raw as Part
    if (!isToolPart(part)) continue
    if (part.state === 'approval-responded') {
      const approval = part.approval as Part | undefined
      if (!approval || typeof approval !== 'object') throw invalidPart('approval', 'object')
      if (typeof approval.approved !== 'boolean') throw invalidPart('approval.approved', 'boolean')
      const reason = approval.reason
      if (
        reason !== undefined &&
        (typeof reason !== 'string' || reason.length > CHAT_LIMITS.reasonChars)
      )
        throw invalidPart('approval.reason', 'string')
      const seq = approvalSeq(approval.id)
      if (seq === null) throw new ParkedItemNotFoundError()
      const frame = await approvalAt(deps, streamRunId, seq)
      if (!frame) throw new ParkedItemNotFoundError()
      const body = { park: frame.park, ...(reason ? { reason } : {}) }
      plan.push({
        seq,
        apply: () =>
          approval.approved
            ? deps.parking.approve(frame.runId, frame.id, decider, body)
            : deps.parking.reject(frame.runId, frame.id, decider, body),
      })
    } else if (
      part.type === 'dynamic-tool' &&
      part.toolName === 'elicitation' &&
      part.state === 'output-available'
    ) {
      const item = pending.find((p) => p.kind === 'elicitation' && p.itemId === part.toolCallId)
      if (!item) continue
      const output = part.output
      if (!output || typeof output !== 'object' || Array.isArray(output))
        throw invalidPart('output', 'object')
      plan.push({
        seq: item.streamSeq,
        apply: () =>
          deps.parking.answer(item.runId, item.itemId, decider, {
            ...output,
            park: item.park,
          }),
      })
    }
  }
  return plan
}

/** The `approval` frame stored at row `seq` of the stream, or `null`. */
async function approvalAt(deps: UiDoorDeps, streamRunId: string, seq: number) {
  for await (const item of deps.sink.replay(streamRunId, {
    after: { seq: seq - 1 },
    until: { seq },
  })) {
    if (parseCursor(item.cursor).seq !== seq) return null
    return item.t === 'approval' && typeof item.park === 'number' ? item : null
  }
  return null
}

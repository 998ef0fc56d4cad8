import type { AgentStreamEvent, StreamFrame } from '../../core/frames.js'
import type { SettledItem } from '../../parking/types.js'
import { canonicalJson } from '../../core/canonical_json.js'

/**
 * The event kind `aiSdkAgent` stores, right before the `approval` frame, for an approval
 * request the AI SDK signed (`experimental_toolApprovalSecret`): the SDK's own approval id
 * and its HMAC-SHA256 signature, which binds that id to the call's id, tool and input. A
 * resume (any replica, after any restart) rebuilds the SDK's `tool-approval-request` from it,
 * so the SDK's verification of the approval accepts it. Not sent by the doors unless
 * allow-listed (`agui.custom`): the person's decision names the call, never this id.
 */
export const TOOL_APPROVAL_REQUEST = 'tool-approval-request'

/** What the SDK signed, as stored: the call's id, the SDK's approval id, its signature. */
export interface SignedRequest {
  id: string
  approvalId: string
  signature: string
}

/** The frame that stores a signed approval request ({@link TOOL_APPROVAL_REQUEST}). */
export const signedRequestFrame = (request: SignedRequest): StreamFrame => ({
  t: 'event',
  event: { kind: TOOL_APPROVAL_REQUEST, ...request } as unknown as AgentStreamEvent,
})

/** The signed request a stored frame holds, or `null` (any other frame, or a broken one). */
export function signedRequestOf(frame: StreamFrame): SignedRequest | null {
  if (frame.t !== 'event') return null
  const event = frame.event as { kind: string } & Record<string, unknown>
  if (event.kind !== TOOL_APPROVAL_REQUEST) return null
  const { id, approvalId, signature } = event
  if (typeof id !== 'string' || typeof approvalId !== 'string' || typeof signature !== 'string') {
    return null
  }
  return { id, approvalId, signature }
}

/**
 * The frames a resume writes for approved calls of a signed request whose input a person
 * edited (PURE): the SDK's signature binds the call's input, and its verification refuses any
 * other, so such a call does not run. One `tool-output-error` per call, naming the tool, never
 * the input; the model gets it as the call's result (as it gets an invalid call's) and the run
 * goes on. An unedited signed approval, or any unsigned one, is left to the SDK.
 */
export function editedSignedApprovals(
  stored: StreamFrame[],
  items: SettledItem[]
): { id: string; frame: StreamFrame }[] {
  // The latest approval of each call id, and whether the SDK signed it (its signed request is
  // stored right before it).
  const before = new Set<string>()
  const calls = new Map<string, { toolName: string; input: unknown; signed: boolean }>()
  for (const frame of stored) {
    const request = signedRequestOf(frame)
    if (request) before.add(request.id)
    else if (frame.t === 'approval') {
      calls.set(frame.id, { ...frame, signed: before.delete(frame.id) })
    }
  }
  const out: { id: string; frame: StreamFrame }[] = []
  for (const item of items) {
    if (item.kind !== 'approval' || item.status !== 'approved' || item.input === undefined) continue
    const call = calls.get(item.id)
    if (!call?.signed) continue
    if (canonicalJson(item.input) === canonicalJson(call.input ?? {})) continue
    const error = `Invalid approval for tool ${call.toolName}: its input was edited after the approval was signed, and a signed approval runs only the input it was signed for`
    out.push({
      id: item.id,
      frame: { t: 'event', event: { kind: 'tool-output-error', id: item.id, error } },
    })
  }
  return out
}

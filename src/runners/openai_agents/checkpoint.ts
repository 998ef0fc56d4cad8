import { RunState, type Agent, type RunToolApprovalItem } from '@openai/agents'
import type { SettledItem } from '../../parking/types.js'
import { canonicalJson } from '../../core/canonical_json.js'
import { CheckpointUnreadable } from '../shared/checkpoint_unreadable.js'

/**
 * What a parked segment of an OpenAI Agents run keeps (the park's JSON checkpoint, never sent to
 * a browser): the SDK's own serialized `RunState` (`state.toString()`), and where the handoffs
 * stood (the sub-agent scopes still open, outermost first, and how many handoffs the run made).
 */
export interface OpenAiAgentsCheckpoint {
  runner: 'openai-agents'
  state: string
  /** The run ids of the sub-agent scopes (handoffs) open when the run parked, outermost first. */
  scopes: string[]
  /** How many handoffs the run made so far (a new one's run id counts on from it). */
  handoffs: number
}

/** What the model is told about a call that did not run (the SDK's rejection message), per status. */
export const DENIAL_SENTENCES = {
  rejected: 'A person rejected this tool call; it did not run.',
  expired: 'Nobody approved this tool call in time; it did not run.',
  cancelled: 'The run was cancelled before this tool call ran.',
} as const

/** What the model is told about an approved call whose edited input the state could not hold. */
export const UNAPPLIED_EDIT_SENTENCE =
  'The approved tool call could not be run with its edited input; it did not run.'

/** The words the model gets for a call that did not run: the person's reason, or the sentence. */
export function denialReason(status: string | undefined, reason?: string | null): string {
  if (reason) return reason
  return DENIAL_SENTENCES[status as keyof typeof DENIAL_SENTENCES] ?? DENIAL_SENTENCES.rejected
}

/** The tool-call id of an interruption (the id its `approval` frame and its item carry). */
export function callIdOf(item: RunToolApprovalItem): string {
  const raw = item.rawItem as { callId?: unknown; id?: unknown }
  return String(raw.callId ?? raw.id ?? '')
}

/** A value as JSON (what a frame may hold): `undefined` as `null`, class instances as plain data. */
const json = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null))

/**
 * A call's input as the model sent it (what its `approval` frame asks about): a function call's
 * arguments as parsed JSON (the text when it is not JSON), another call's action or input.
 */
export function argumentsOf(raw: Record<string, unknown>): unknown {
  if (typeof raw.arguments !== 'string') {
    return json(raw.action ?? raw.arguments ?? raw.input ?? {})
  }
  try {
    return JSON.parse(raw.arguments || '{}')
  } catch {
    return raw.arguments
  }
}

/**
 * Whether a settled approval carries a person's edit: an input (the parking layer hands the
 * asked one when nobody edited) that differs from what the model asked, key order aside.
 */
function isEdit(item: SettledItem, interruption: RunToolApprovalItem): boolean {
  if (item.status !== 'approved' || item.input === undefined) return false
  const asked = argumentsOf(interruption.rawItem as unknown as Record<string, unknown>)
  return canonicalJson(item.input) !== canonicalJson(asked ?? {})
}

/** `checkpoint` as this runner wrote it, or {@link CheckpointUnreadable}. PURE. */
export function checkpointOf(checkpoint: unknown): OpenAiAgentsCheckpoint {
  const value = checkpoint as Partial<OpenAiAgentsCheckpoint> | null
  if (
    !value ||
    typeof value !== 'object' ||
    value.runner !== 'openai-agents' ||
    typeof value.state !== 'string'
  ) {
    throw new CheckpointUnreadable('not an OpenAI Agents checkpoint')
  }
  return {
    runner: 'openai-agents',
    state: value.state,
    scopes: Array.isArray(value.scopes)
      ? value.scopes.filter((id): id is string => typeof id === 'string')
      : [],
    handoffs: Number.isSafeInteger(value.handoffs) ? (value.handoffs as number) : 0,
  }
}

/**
 * The serialized state with each edited call's arguments replaced (PURE): every `function_call`
 * item of the call's id (the model's response, the generated items, the processed response, the
 * interruption), in nested agent-tool runs too (serialized states inside the state). The SDK
 * approves an invocation by its name and arguments, so the state must hold the edited arguments
 * everywhere before the approval is given. Returns the new text and the ids it found.
 */
export function withEditedInputs(
  state: string,
  edits: Map<string, unknown>
): { state: string; found: Set<string> } {
  const found = new Set<string>()
  if (edits.size === 0) return { state, found }
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') {
      // A nested run's state (an `agent.asTool()` run waiting) is stored as its own JSON text.
      if (!value.startsWith('{') || !value.includes('"$schemaVersion"')) return value
      try {
        return JSON.stringify(walk(JSON.parse(value)))
      } catch {
        return value
      }
    }
    if (Array.isArray(value)) return value.map(walk)
    if (!value || typeof value !== 'object') return value
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(value)) out[key] = walk(inner)
    const callId = typeof out.callId === 'string' ? out.callId : undefined
    if (out.type === 'function_call' && callId && edits.has(callId)) {
      out.arguments = JSON.stringify(edits.get(callId) ?? {})
      found.add(callId)
    }
    return out
  }
  return { state: JSON.stringify(walk(JSON.parse(state))), found }
}

/**
 * The parked run's `RunState`, rebuilt for `agent` from the checkpoint with the decisions
 * applied: an approved call is approved (with a person's edit written into the state first,
 * when its input differs from the asked one; a call that is not a function call cannot hold
 * one, its approval frame refuses edits, `inputSchema: false`), any
 * other settlement (rejected, expired, cancelled) is rejected with the words the model is told
 * ({@link denialReason}). Throws {@link CheckpointUnreadable} when the SDK cannot read it (the
 * agent, its tools or handoffs changed since the run paused). Returns the calls whose denial
 * is stored already (their SDK result is not written again).
 */
export async function restoredState(
  agent: Agent<any, any>,
  checkpoint: OpenAiAgentsCheckpoint,
  items: SettledItem[]
): Promise<{ state: RunState<any, Agent<any, any>>; denied: Set<string> }> {
  const approvals = items.filter((item) => item.kind === 'approval')
  const byId = new Map(approvals.map((item) => [item.id, item]))
  let state = await stateOf(agent, checkpoint.state)
  // An edit is an input that differs from the asked one; only then is the state rewritten.
  const edits = new Map<string, unknown>()
  for (const interruption of state.getInterruptions()) {
    const item = byId.get(callIdOf(interruption))
    if (item && isEdit(item, interruption)) edits.set(item.id, item.input)
  }
  let found = new Set<string>()
  if (edits.size > 0) {
    let text: string
    try {
      ;({ state: text, found } = withEditedInputs(checkpoint.state, edits))
    } catch (error) {
      throw new CheckpointUnreadable('the SDK cannot read the state', error)
    }
    state = await stateOf(agent, text)
  }
  const denied = new Set<string>()
  for (const interruption of state.getInterruptions()) {
    const id = callIdOf(interruption)
    const item = byId.get(id)
    if (!item) continue
    // An edit the state could not hold (no such call in it) is not run with the old input.
    const unapplied = edits.has(id) && !found.has(id)
    if (item.status === 'approved' && !unapplied) {
      state.approve(interruption)
    } else if (unapplied) {
      state.reject(interruption, { message: UNAPPLIED_EDIT_SENTENCE })
    } else {
      // Its denial is stored already (the settlement's `tool-output-denied`).
      denied.add(id)
      state.reject(interruption, { message: denialReason(item.status, item.reason) })
    }
  }
  return { state, denied }
}

/** The SDK's `RunState` of `text` for `agent`, or {@link CheckpointUnreadable}. */
async function stateOf(agent: Agent<any, any>, text: string) {
  try {
    return await RunState.fromString(agent, text)
  } catch (error) {
    throw new CheckpointUnreadable('the SDK cannot read the state', error)
  }
}

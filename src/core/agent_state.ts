import fastJsonPatch, { type Operation } from 'fast-json-patch'
import { MAX_JSON_DEPTH, tooDeep } from './json_depth.js'
import { describeIssues, InvalidAgUiInputError } from '../errors.js'

/**
 * The agent's own state (AG-UI's shared state: a recipe, a plan's steps, a document), as the
 * `state` event frames set it (PURE: no I/O). A `{ kind: 'state', snapshot }` replaces it with a
 * JSON object; a `{ kind: 'state', delta }` changes it with RFC 6902 operations (checked as JSON
 * Patch by `fast-json-patch`). Exactly one of the two. A stream has no agent state until its
 * first snapshot: a delta before it applies to nothing and is refused, so every reader (live,
 * replayed, re-attached) holds the same state at every position. Served on AG-UI as
 * `STATE_SNAPSHOT` / `STATE_DELTA`, on the useChat door as a `data-state` part.
 */

/** The agent's state: a JSON object. */
export type AgentState = Record<string, unknown>

/** A `state` event: a snapshot or a delta, never both. */
export type StateEvent =
  | { kind: 'state'; snapshot: AgentState; delta?: undefined }
  | { kind: 'state'; delta: Operation[]; snapshot?: undefined }

/** The rules a state event breaks, by the name a refusal carries (`InvalidFrameError`). */
export type StateRule =
  /** Exactly one of `snapshot` and `delta`. */
  | 'stateSnapshotOrDelta'
  /** `snapshot` is a JSON object (not an array, not null). */
  | 'stateObject'
  /** `delta` is an RFC 6902 operations array (`fast-json-patch`'s `validate`). */
  | 'jsonPatch'
  /** `delta` applies to the state as the stream's frames left it (a snapshot came first). */
  | 'statePatchApplies'
  /** The state after the frame is at most `maxStateBytes` of JSON. */
  | 'maxStateBytes'
  /** The state after the frame nests at most {@link MAX_STATE_DEPTH} levels. */
  | 'maxDepth'

const isObject = (value: unknown): value is AgentState =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

/**
 * How deep the agent's state may nest (the state itself is level 1): one level less than the
 * depth rule of a request body, where the page sends it back (`RunAgentInput.state`, useChat's
 * body `state`), so every state an agent writes is one its page can send.
 */
export const MAX_STATE_DEPTH = MAX_JSON_DEPTH - 1

/** The UTF-8 bytes of `value` as JSON. */
export const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8')

/** Whether a JSON value is a JSON object (the rule on a snapshot and on the page's state). */
export const isStateObject = isObject

/**
 * The rule a `state` event's shape breaks (without the state it applies to), or `null`: exactly
 * one of `snapshot` (a JSON object) and `delta` (operations `fast-json-patch` validates).
 */
export function stateShapeIssue(event: Record<string, unknown>): StateRule | null {
  const hasSnapshot = event.snapshot !== undefined
  const hasDelta = event.delta !== undefined
  if (hasSnapshot === hasDelta) return 'stateSnapshotOrDelta'
  if (hasSnapshot) return isObject(event.snapshot) ? null : 'stateObject'
  if (!Array.isArray(event.delta)) return 'jsonPatch'
  // Without a document, `validate` checks each operation's shape only (op, path, value, from).
  return fastJsonPatch.validate(event.delta as Operation[]) ? 'jsonPatch' : null
}

/**
 * The agent state after `event`, from `state` (`null`: none yet), or the rule it breaks. Never
 * changes `state`: a delta (and its values) applies to a copy; a snapshot is copied as stored (JSON).
 *
 * @param maxBytes the most bytes of JSON the state may take after the event
 */
export function applyStateEvent(
  state: AgentState | null,
  event: Record<string, unknown>,
  maxBytes: number
): { state: AgentState } | { rule: StateRule } {
  const shape = stateShapeIssue(event)
  if (shape) return { rule: shape }
  let next: unknown
  if (event.snapshot !== undefined) {
    // A copy as stored (JSON): the writer's object may change after the write, the state not.
    next = fastJsonPatch.deepClone(event.snapshot)
  } else {
    if (state === null) return { rule: 'statePatchApplies' }
    try {
      // Copies of both: an operation's `value` is put in the document as it is.
      next = fastJsonPatch.applyPatch(
        fastJsonPatch.deepClone(state),
        fastJsonPatch.deepClone(event.delta) as Operation[],
        true,
        true
      ).newDocument
    } catch {
      // A path that does not resolve, a failed `test`, a prototype key: refused.
      return { rule: 'statePatchApplies' }
    }
    // A patch replacing the root with something else than an object leaves no state object.
    if (!isObject(next)) return { rule: 'stateObject' }
  }
  if (tooDeep(next, MAX_STATE_DEPTH)) return { rule: 'maxDepth' }
  if (jsonBytes(next) > maxBytes) return { rule: 'maxStateBytes' }
  return { state: next as AgentState }
}

/** Whether a frame is a `state` event frame. */
export function isStateFrame(
  frame: unknown
): frame is { t: 'event'; event: StateEvent & Record<string, unknown> } {
  const f = frame as { t?: unknown; event?: { kind?: unknown } } | null
  return f?.t === 'event' && f.event?.kind === 'state'
}

/**
 * The one rule on the page's state a request carries (AG-UI `RunAgentInput.state`, useChat's
 * body `state`), as the runner's `ctx.input.state`: `undefined` when absent, `null` or an empty
 * object (what `HttpAgent` sends when the page set none); else a JSON object of at most
 * `maxBytes` of JSON. Both doors call it once per request, before anything is written; `subject`
 * is the door's refusal sentence (`Invalid RunAgentInput`, `Invalid chat request`).
 *
 * @throws InvalidAgUiInputError (400 `invalid_input`, field `state`, rule `object` or `maxBytes`)
 */
export function pageState(
  value: unknown,
  maxBytes: number,
  subject: string
): AgentState | undefined {
  if (value === undefined || value === null) return undefined
  if (isObject(value) && Object.keys(value).length === 0) return undefined
  const rule = !isObject(value) ? 'object' : jsonBytes(value) > maxBytes ? 'maxBytes' : null
  if (rule) throw new InvalidAgUiInputError(describeIssues(subject, [{ field: 'state', rule }]))
  return value as AgentState
}

/**
 * A resumed segment's input: the input its run parked with, its `state` replaced by the page's
 * state sent with the resume (AG-UI `RunAgentInput.state` with `resume[]`, the useChat approval
 * response's body `state`), checked as {@link pageState}; unchanged when none was sent (the
 * state of the original input stays) or when the stored input is not a JSON object (a host's
 * own input, not a door's).
 */
export function withPageState(input: unknown, state: AgentState | undefined): unknown {
  if (state === undefined) return input
  if (input === null || input === undefined) return { state }
  if (!isObject(input)) return input
  return { ...input, state }
}

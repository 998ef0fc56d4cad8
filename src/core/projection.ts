import {
  FAILURE_SENTENCES,
  USER_MESSAGE,
  type AgentStreamEvent,
  type StreamFrame,
} from './frames.js'

/**
 * The one public projection: what of a stored frame may leave the process (invariant 8 of
 * docs/design.md). Every door reads frames through {@link publicFrame}: the native SSE route
 * serves its result as is, the AG-UI translator translates it. PURE: no I/O, no clock.
 */

/** What a failed tool call's result says unless the app opts in to the error text. */
export const TOOL_FAILED_SENTENCE = 'The tool call failed.'
/** What a declined tool call's result says: a person rejected it. */
export const TOOL_DECLINED_SENTENCE = 'The person declined this tool call; it did not run.'
/** What the result says of a call whose approval lapsed before anyone decided. */
export const TOOL_EXPIRED_SENTENCE =
  'The approval for this tool call expired before anyone decided; it did not run.'
/** What the result says of a call its run's cancel stopped (waiting for approval, or approved). */
export const TOOL_CANCELLED_SENTENCE = 'The run was cancelled; this tool call did not run.'

/** Why a call did not run, as a `tool-output-denied` event's `status` says. */
export type DeniedStatus = 'rejected' | 'expired' | 'cancelled'

/**
 * The fixed sentence for a call that did not run, by its `tool-output-denied` status (absent,
 * as frames stored before the status existed: declined).
 */
export function deniedSentence(status: DeniedStatus | undefined): string {
  if (status === 'expired') return TOOL_EXPIRED_SENTENCE
  if (status === 'cancelled') return TOOL_CANCELLED_SENTENCE
  return TOOL_DECLINED_SENTENCE
}
/** What `SUBAGENT_ERROR` says of a delegated run that failed. */
export const SUBAGENT_FAILED_SENTENCE = 'A delegated agent stopped unexpectedly.'

/** The app's opt-ins (`agui.*` config): everything else stays on the server. */
export interface ProjectionRules {
  /** Send a failed tool's error as written (off: {@link TOOL_FAILED_SENTENCE}). Default false. */
  toolErrorText?: boolean
  /** Send `reasoning` events (off: dropped). Default false. */
  reasoning?: boolean
  /**
   * Event kinds allow-listed as custom events, with the fields each may carry (besides `kind`).
   * An unknown kind not listed here is dropped. Default {@link DEFAULT_CUSTOM}.
   */
  custom?: Record<string, string[]>
  /**
   * Names of `custom` events (`{ kind: 'custom', name, value }`) sent with their whole value, as
   * written (an array stays an array): AG-UI `CUSTOM { name, value }`, a `data-<name>` part on
   * the useChat door. A `custom` event whose name is not listed is dropped. Default none.
   */
  customEvents?: readonly string[]
}

/** The custom events sent when the app names none: the run's title. */
export const DEFAULT_CUSTOM: Readonly<Record<string, string[]>> = Object.freeze({
  title: ['title'],
})

type EventKind = AgentStreamEvent['kind']
type FieldsOf<K extends EventKind> = Exclude<keyof Extract<AgentStreamEvent, { kind: K }>, 'kind'>

/**
 * Each known event kind's own fields, as the {@link AgentStreamEvent} type lists them (the
 * `satisfies` keeps the two in step): anything else a writer put in is not sent.
 */
const EVENT_FIELDS = {
  'step-start': [],
  'step-finish': ['usage', 'costUsd', 'reasoningMs', 'model'],
  'text': ['text'],
  'reasoning': ['text'],
  'tool-input-start': ['id', 'name', 'toolKind', 'parentId'],
  'tool-input-delta': ['id', 'delta'],
  'tool-input-available': ['id', 'name', 'input', 'toolKind', 'parentId'],
  'tool-output': ['id', 'output'],
  'tool-output-error': ['id', 'error'],
  'tool-output-denied': ['id', 'reason', 'status', 'message'],
  'elicitation': ['id', 'request'],
  'approval-requested': ['id', 'approver', 'confirmation', 'expiresAt', 'reason'],
  // `decidedBy` is left out: who decided stays on the server.
  'approval-settled': ['id', 'status', 'approver', 'decidedVia', 'remember', 'reason'],
  'ui': ['id', 'component', 'props', 'version', 'fallbackText', 'componentVersions', 'toolCallId'],
  'title': ['title'],
  'source': ['id', 'sourceType', 'url', 'title', 'mediaType', 'filename'],
  'file': ['mediaType', 'url', 'filename'],
  'subagent-start': ['runId', 'name', 'parentToolCallId'],
  'subagent-finish': ['runId', 'status'],
  'cancelled': [],
  'user-message': ['id', 'parts'],
  'queue': ['queue', 'started'],
  'state': ['snapshot', 'delta'],
  'custom': ['name', 'value'],
} as const satisfies { [K in EventKind]: readonly FieldsOf<K>[] }

const isKnown = (kind: string): kind is EventKind => Object.hasOwn(EVENT_FIELDS, kind)

/** `source`'s fields named in `fields` that are present, plus `kind`. */
function pick(source: Record<string, unknown>, kind: string, fields: readonly string[]) {
  const out: Record<string, unknown> = { kind }
  for (const field of fields) {
    if (source[field] !== undefined) out[field] = source[field]
  }
  return out
}

/** A step's usage as numbers only: provider metadata and nested objects stay on the server. */
function numericUsage(usage: Record<string, unknown>) {
  const out: Record<string, number> = {}
  for (const [key, value] of Object.entries(usage)) {
    if (typeof value === 'number' && Number.isFinite(value)) out[key] = value
  }
  return out
}

/**
 * The fields a custom event may carry (`kind` excluded), or `null` when `kind` is not
 * allow-listed (the AG-UI door then sends no `CUSTOM` for it).
 */
export function customFields(
  event: { kind: string } & Record<string, unknown>,
  rules: ProjectionRules
): Record<string, unknown> | null {
  const custom = rules.custom ?? DEFAULT_CUSTOM
  if (!Object.hasOwn(custom, event.kind)) return null
  const value = pick(event, event.kind, custom[event.kind])
  delete value.kind
  return value
}

/**
 * Names a door sends events of its own under, never a `custom` event's: the `agent_stream.`
 * namespace (AG-UI's `agent_stream.run_state` CUSTOM event), `queued` (AG-UI's CUSTOM, the
 * useChat door's `data-queued`), `state` and `subagent` (the useChat door's `data-state`, the
 * agent's state, and `data-subagent`).
 */
const RESERVED_CUSTOM_NAMES = new Set(['queued', 'state', 'subagent'])

/**
 * Whether a `custom` event named `name` may leave the process: `customEvents` lists it, and it
 * is none of the names a door uses itself ({@link RESERVED_CUSTOM_NAMES}, the `agent_stream.`
 * namespace, a kind `custom` allow-lists: each the same AG-UI `CUSTOM` name or useChat data
 * part), so a runner, or a remote agent it mirrors, cannot pass a value off as the package's.
 */
export function customAllowed(name: unknown, rules: ProjectionRules): boolean {
  if (typeof name !== 'string' || !(rules.customEvents?.includes(name) ?? false)) return false
  if (RESERVED_CUSTOM_NAMES.has(name) || name.startsWith('agent_stream.')) return false
  return !Object.hasOwn(rules.custom ?? DEFAULT_CUSTOM, name)
}

/**
 * The frame as it may leave the process, or `null` when it is not sent at all:
 * - `error`: the message is its code's fixed sentence ({@link FAILURE_SENTENCES});
 * - `tool-output-error`: the error is {@link TOOL_FAILED_SENTENCE} unless `toolErrorText`;
 * - `tool-output-denied`: `message` is its status's fixed sentence ({@link deniedSentence});
 * - `reasoning`: dropped unless `reasoning`;
 * - `approval-settled`: without `decidedBy`;
 * - `user-message` (what the person said): dropped, never the agent's output;
 * - `custom`: dropped unless `customEvents` names it, then its name and value as written;
 * - `step-finish`: `usage` keeps its finite numeric fields only;
 * - a known event kind keeps only its own fields; an unknown kind is dropped unless `custom`
 *   allow-lists it, and then keeps `kind` and the listed fields.
 * Never mutates `frame`.
 */
export function publicFrame(frame: StreamFrame, rules: ProjectionRules): StreamFrame | null {
  if (frame.t === 'error') {
    return { ...frame, message: FAILURE_SENTENCES[frame.code] ?? FAILURE_SENTENCES.run_failed }
  }
  if (frame.t !== 'event') return frame
  const source = frame.event as { kind: string } & Record<string, unknown>
  // What the person said is never sent as the agent's output (nor as a custom event).
  if (source.kind === USER_MESSAGE) return null
  if (!isKnown(source.kind)) {
    const fields = customFields(source, rules)
    if (!fields) return null
    return { ...frame, event: { kind: source.kind, ...fields } as unknown as AgentStreamEvent }
  }
  if (source.kind === 'reasoning' && !rules.reasoning) return null
  if (source.kind === 'custom' && !customAllowed(source.name, rules)) return null
  const event = pick(source, source.kind, EVENT_FIELDS[source.kind])
  if (source.kind === 'tool-output-error' && !rules.toolErrorText) {
    event.error = TOOL_FAILED_SENTENCE
  }
  if (source.kind === 'tool-output-denied') {
    event.message = deniedSentence(source.status as DeniedStatus | undefined)
  }
  if (source.kind === 'step-finish' && event.usage !== undefined) {
    const usage = event.usage
    if (usage !== null && typeof usage === 'object' && !Array.isArray(usage)) {
      event.usage = numericUsage(usage as Record<string, unknown>)
    } else delete event.usage
  }
  return { ...frame, event: event as AgentStreamEvent }
}

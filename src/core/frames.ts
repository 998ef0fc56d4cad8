/**
 * The frame vocabulary of the token-stream sink SPI (docs/design.md, "The sink SPI"), field for
 * field, so an app written against that SPI plugs this package's sink in unchanged.
 *
 * A frame is one unit an agent writes into a run's stream. Readers must tolerate event kinds they
 * do not know: fields are only ever added, and new ones are optional.
 */

import type { StateEvent } from './agent_state.js'

/**
 * The run id grammar (streams, threads, AG-UI runs): visible ASCII without `/`, at most 191
 * characters, so an id keys a row and mints door ids without escaping.
 */
export const RUN_ID = /^[A-Za-z0-9_:.-]{1,191}$/

/** Whether `value` is a run id of the {@link RUN_ID} grammar. */
export const isRunId = (value: unknown): value is string =>
  typeof value === 'string' && RUN_ID.test(value)

/** Why a run failed, as streamed in an `error` frame. */
export type AgentStreamErrorCode =
  | 'quota_exceeded'
  | 'output_rejected'
  | 'structured_output_invalid'
  | 'replay_diverged'
  | 'model_no_output'
  | 'run_failed'
  | 'replica_shutdown'
  | 'checkpoint_unreadable'

/**
 * The fixed sentence of each error code: what readers see instead of a thrown error's text
 * (invariant 8, docs/design.md).
 */
export const FAILURE_SENTENCES: Record<AgentStreamErrorCode, string> = {
  quota_exceeded: 'The run stopped: a usage limit was reached.',
  output_rejected: 'The run stopped: its output was rejected.',
  structured_output_invalid: 'The run stopped: its output did not have the expected shape.',
  replay_diverged: 'The run stopped: it could not continue from where it paused.',
  model_no_output: 'The run stopped: the model returned nothing.',
  run_failed: 'The run stopped unexpectedly.',
  replica_shutdown: 'The run stopped: the server shut down before it finished. Try again.',
  checkpoint_unreadable:
    "The run's checkpoint could not be read: the agent changed since the run paused.",
}

/** The stable list of {@link AgentStreamErrorCode} values. */
export const AGENT_STREAM_ERROR_CODES: readonly AgentStreamErrorCode[] = [
  'quota_exceeded',
  'output_rejected',
  'structured_output_invalid',
  'replay_diverged',
  'model_no_output',
  'run_failed',
  'replica_shutdown',
  'checkpoint_unreadable',
]

/** One choice of an elicitation question. */
export interface ElicitationOption {
  value: string
  label: string
  hotkey?: string
}

/** One question of a question set; answers come back under its `id`. */
export interface ElicitationQuestion {
  id: string
  prompt: string
  options: ElicitationOption[]
  multiple?: boolean
  /** Pre-picked values, taken when a reply leaves the question out. */
  defaults?: string[]
  allowFreeText?: boolean
}

/** A question set a run parks on. `id` is the tool-call id it is persisted under. */
export interface ElicitationRequest {
  id: string
  source: 'intake' | 'ask'
  preamble?: string
  questions: ElicitationQuestion[]
}

/** Display copy for the person deciding an approval. */
export interface ToolConfirmation {
  title?: string
  description?: string
  [key: string]: unknown
}

/**
 * A part of what a person said: text, or a file (the AI SDK's UI `file` part: a media type and an
 * `https:` or `data:` URL).
 */
export type UserPart =
  | { type: 'text'; text: string }
  | { type: 'file'; mediaType: string; url: string; filename?: string }

/** The event kind of a person's message ({@link AgentStreamEvent} `user-message`). */
export const USER_MESSAGE = 'user-message'

/** The `event` frame's payload, discriminated on `kind` (docs/design.md, "Event kinds"). */
export type AgentStreamEvent =
  | { kind: 'step-start' }
  | {
      kind: 'step-finish'
      usage?: Record<string, unknown>
      /** `null` = unpriced, never a made-up 0. */
      costUsd?: number | null
      reasoningMs?: number
      model?: string
    }
  | { kind: 'text'; text: string }
  | { kind: 'reasoning'; text: string }
  | {
      kind: 'tool-input-start'
      id: string
      name: string
      toolKind: 'read' | 'action'
      parentId?: string
    }
  | { kind: 'tool-input-delta'; id: string; delta: string }
  | {
      kind: 'tool-input-available'
      id: string
      name: string
      input: unknown
      toolKind: 'read' | 'action'
      parentId?: string
    }
  | { kind: 'tool-output'; id: string; output: unknown }
  | { kind: 'tool-output-error'; id: string; error: unknown }
  | {
      kind: 'tool-output-denied'
      id: string
      reason?: string
      /** Why the call did not run: a person rejected it, its approval expired, the run was cancelled. */
      status?: 'rejected' | 'expired' | 'cancelled'
      /** The status's fixed sentence, set by the public projection (a writer's own is replaced). */
      message?: string
    }
  | { kind: 'elicitation'; id: string; request: ElicitationRequest }
  | {
      kind: 'approval-requested'
      id: string
      approver: string
      confirmation?: ToolConfirmation
      expiresAt?: string
      reason?: string
    }
  | {
      kind: 'approval-settled'
      id: string
      status: 'approved' | 'rejected' | 'expired'
      approver?: string
      decidedBy?: string
      decidedVia?: string
      remember?: boolean
      reason?: string
    }
  | {
      kind: 'ui'
      id: string
      component: string
      props: unknown
      version?: number
      fallbackText?: string
      componentVersions?: Record<string, number>
      toolCallId?: string
    }
  | { kind: 'title'; title: string }
  /**
   * A source the model cited (the AI SDK's `source-url` and `source-document` parts): a URL, or a
   * document named by `title` with its media type.
   */
  | {
      kind: 'source'
      id: string
      sourceType: 'url' | 'document'
      url?: string
      title?: string
      mediaType?: string
      filename?: string
    }
  /** A file the model generated (the AI SDK's `file` part); `url` is an https or `data:` URL. */
  | { kind: 'file'; mediaType: string; url: string; filename?: string }
  /**
   * A delegated run's scope opens (this package's addition; readers that do not know it skip
   * it): frames after it belong to `runId` until its `subagent-finish`. Written by
   * `RunContext.child()`; the AG-UI door maps it to `SUBAGENT_STARTED`.
   */
  | { kind: 'subagent-start'; runId: string; name?: string; parentToolCallId?: string }
  /** A delegated run's scope closes (`SUBAGENT_FINISHED`, or `SUBAGENT_ERROR` when failed). */
  | { kind: 'subagent-finish'; runId: string; status?: 'success' | 'failed' }
  | { kind: 'cancelled' }
  /**
   * What the person said to start the run (this package's addition, reserved: the doors write it
   * as a run's first frame, a runner's writer is refused it). `id` is the client's message id.
   * Never served as agent output: the public projection drops it; the conversation
   * (`RunContext.conversation()`, `aiSdkAgent`), `MESSAGES_SNAPSHOT` and
   * `GET /chat/:chatId/messages` give it as the person's message.
   */
  | { kind: 'user-message'; id: string; parts: UserPart[] }
  | { kind: 'queue'; queue: unknown; started?: { messageId: string; runId: string } }
  /**
   * The agent's own state (AG-UI shared state), exactly one of: `snapshot`, a JSON object that
   * replaces it, or `delta`, RFC 6902 operations on it (a snapshot must come first). Checked when
   * written and in its commit: the shape, a delta that applies to the stream's state as stored
   * (whoever wrote it), the state at most
   * `maxStateBytes` (64 KiB by default); a refusal stores nothing. Served as AG-UI
   * `STATE_SNAPSHOT` / `STATE_DELTA` and as the useChat `data-state` part (src/core/agent_state.ts).
   */
  | StateEvent
  /**
   * An app's own event, as AG-UI's `CUSTOM` has it: a name and any JSON value (an array stays an
   * array). Sent only when the app allow-lists the name (`agui.customEvents`): as `CUSTOM
   * { name, value }` on AG-UI, `data-<name>` on the useChat door, as written on the native SSE
   * route; dropped otherwise. The sink refuses a name that is empty or over 191 characters and a
   * value over `DEFAULTS.maxCustomValueBytes` (64 KiB of JSON) or nested deeper than the depth
   * rule (`MAX_JSON_DEPTH`).
   */
  | { kind: 'custom'; name: string; value: unknown }

/** One frame of a run's stream, discriminated on `t` (docs/design.md, "Frames"). */
export type StreamFrame =
  | { t: 'text'; v: string }
  | {
      t: 'component'
      name: string
      data: unknown
      /** Stamped as `<toolCallId>:ui:<n>`; a later frame with the same id replaces this one. */
      id?: string
      toolCallId?: string
      version?: number
      fallbackText?: string
      componentVersions?: Record<string, number>
      /** A preview of a call's streaming input: delivered live, never persisted. */
      partial?: true
    }
  | { t: 'event'; event: AgentStreamEvent }
  | { t: 'error'; code: AgentStreamErrorCode; message: string }
  | {
      t: 'elicitation'
      /** The PARKED run (a sub-agent's own id when a child asked), not necessarily the stream's. */
      runId: string
      id: string
      request: ElicitationRequest
      /**
       * Which park of `runId` the frame is part of (from 1): stamped by the sink when the frame
       * is stored (a writer's own value is dropped); a decision names it to pin one park of an
       * id the run reused.
       */
      park?: number
    }
  | {
      t: 'approval'
      target?: { kind: 'proposal'; proposalId: string }
      /** The PARKED run (a sub-agent's own id when a child asked), not necessarily the stream's. */
      runId: string
      id: string
      toolName: string
      input: unknown
      /**
       * The JSON Schema of the tool's input, as the tool declares it (the AI SDK runner sets it
       * from the tool's `inputSchema`; a writer may set it by hand). An edited input (the admin
       * page, a door's resume, the decision API) is checked against it before it is stored:
       * one that does not fit is refused (422 naming the field and rule), nothing changes.
       * Without it an edit is checked for size and depth only. `false` when the runner cannot
       * run an edited input (the OpenAI Agents runner for a call that is not a function call,
       * Mastra, a signed AI SDK approval): every edit is refused, the call runs as asked.
       */
      inputSchema?: Record<string, unknown> | boolean
      confirmation?: ToolConfirmation
      /** Who may decide: `'requester'` (the default) or a role. */
      approver?: string
      /** ISO-8601 instant the request lapses; absent = never. */
      expiresAt?: string
      /** Which park of `runId` the frame is part of: stamped by the sink (see `elicitation`). */
      park?: number
    }

/** The `t` of every frame kind, in the SPI's order. */
export const FRAME_KINDS = [
  'text',
  'component',
  'event',
  'error',
  'elicitation',
  'approval',
] as const

/**
 * A frame as a subscriber receives it: the frame itself plus `cursor`, the position right after
 * it. Subscribing again with `{ after: cursor }` yields exactly what followed (no gap, no
 * duplicate). This is what the SSE `id:` carries.
 */
export type DeliveredFrame = StreamFrame & { readonly cursor: string }

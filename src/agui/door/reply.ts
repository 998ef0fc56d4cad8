import type { AgUiEvent, TranslatorCheckpoint, TranslatorOptions } from '../translate/index.js'
import type { CheckpointSettings, DoorDeps, MultitaskStrategy } from '../../door/index.js'
import type { DoorReply, SentEvent } from '../../door/reply.js'
import type { SegmentCache } from './segment_cache.js'

/** Options of the AG-UI door: the translator's, plus input and connection settings. */
export interface AgUiDoorOptions
  extends Omit<TranslatorOptions, 'streamRunId' | 'messagesSnapshot'>, CheckpointSettings {
  /**
   * Cap on a `RunAgentInput` body, in bytes as received: both transports refuse a larger one
   * (413 `body_too_large`) before the door is asked. Default 1048576 (1 MiB).
   */
  maxBodyBytes?: number
  /** Cancel the run when its client disconnects (off: it runs on, re-attach later). Default false. */
  abortOnDisconnect?: boolean
  /**
   * Frontend tools: the client's `tools` reach the runner (`input.tools`); a call the agent makes
   * to one ends the run with `pendingToolCallIds` (for a client that parses it: `clientVersion`),
   * and the next input's `tool` message is accepted for such a call only (`input.toolResults`).
   * Default false.
   */
  frontendTools?: boolean
  /**
   * Send `MESSAGES_SNAPSHOT` before `RUN_FINISHED`: the thread's whole transcript (each run's
   * user message, under the client's id, and what the agent wrote). The 1.0 client drops local
   * messages a snapshot leaves out. `true`: before each `RUN_FINISHED`; `'resumes'`: only in a
   * run that continues a park (a resume, or the continuation of an answer given elsewhere),
   * where a client may hold a tool message of its own for the approved call (CopilotKit's
   * `useInterrupt` adds `{"approved":true}` and keeps the first result per call) that the
   * snapshot replaces with the real result; `false`: never. Default `'resumes'`.
   */
  messagesSnapshot?: boolean | 'resumes'
  /**
   * A new message on a thread whose run is talking (LangGraph's `multitask_strategy`):
   * `'reject'` (409 `thread_busy` with the run's `runId`, nothing written), `'enqueue'` (it
   * waits in the thread's queue and starts when the run ends), `'interrupt'` / `'rollback'`
   * (the run is stopped, its turn kept or removed, then the message starts). A request may ask
   * for another in `forwardedProps.multitaskStrategy`. A thread parked on open interrupts keeps
   * the AG-UI rule (`interrupt_pending`) unless `interrupt` or `rollback` is asked. Default
   * `'reject'` (the protocol's rule: one run at a time per thread).
   */
  multitaskStrategy?: MultitaskStrategy
  /**
   * The `@ag-ui/client` version assumed for a request that does not declare its own in the
   * `X-AG-UI-Client-Version` header: the door leaves out or maps what that version's schema
   * refuses (`src/agui/compat/`: `SUBAGENT_*` before 0.0.59; `pendingToolCallIds` and the
   * `cancelled` outcome before 1.0.0). Default `'0.0.57'`, which every client in use parses
   * (CopilotKit 1.61 through 1.75, `@ag-ui/client` 0.0.57 through 1.0.0); `'1.0.0'` serves
   * AG-UI 1.0 whole to every request that does not say otherwise.
   */
  clientVersion?: string
}

/**
 * One AG-UI event to send, with its SSE `id:` (`position.ts`: the stream cursor on a frame's
 * last event, `<seq>:<k>` on the others; none in the join prelude).
 */
export type SseItem = SentEvent<AgUiEvent>

/**
 * What the AG-UI door answers, for any transport (the doors' one union, `src/door/reply.ts`): a
 * refusal before the stream opens (a 4xx with `{ code, message }`), or the AG-UI run as events
 * (never `none`: an AG-UI request always gets a run, if only its `RUN_ERROR`).
 */
export type AgUiReply = Exclude<DoorReply<AgUiEvent>, { kind: 'none' }>

/**
 * What every use case of the AG-UI door works with: the kernel's deps (`src/door/deps.ts`) over
 * its options and translator state, and where this replica learnt segments end
 * (`segment_cache.ts`).
 */
export interface AgUiDeps extends DoorDeps<AgUiDoorOptions, TranslatorCheckpoint> {
  segments?: SegmentCache
}

/**
 * Whether `run` sends `MESSAGES_SNAPSHOT` before its `RUN_FINISHED` (`messagesSnapshot`,
 * default `'resumes'`).
 */
export function sendsSnapshot(options: AgUiDoorOptions, run: { kind: 'start' | 'resume' }) {
  const setting = options.messagesSnapshot ?? 'resumes'
  return setting === true || (setting === 'resumes' && run.kind === 'resume')
}

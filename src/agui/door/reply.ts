import type { LucidTokenStreamSink } from '../../sink/lucid_sink.js'
import type { RunDriver } from '../../runner/driver.js'
import type { Parking } from '../../parking/parking.js'
import type { AgUiEvent, TranslatorOptions } from '../translate/index.js'
import type { TranslatorCheckpoints } from './checkpoints.js'
import type { DoorFacts } from './facts.js'
import type { AgUiRunStore } from './runs.js'
import type { DoorReply, SentEvent } from '../../door/reply.js'

/** Options of the AG-UI door: the translator's, plus input and connection settings. */
export interface AgUiDoorOptions extends Omit<
  TranslatorOptions,
  'streamRunId' | 'messagesSnapshot'
> {
  /** Cap on a `RunAgentInput` body, in bytes. Default 1048576 (1 MiB). */
  maxBodyBytes?: number
  /** Cancel the run when its client disconnects (off: it runs on, re-attach later). Default false. */
  abortOnDisconnect?: boolean
  /**
   * Frontend tools: the client's `tools` reach the runner (`input.tools`); a call the agent makes
   * to one ends the run with `pendingToolCallIds`, and the next input's `tool` message is accepted
   * for such a call only (`input.toolResults`). Default false.
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
   * Keep the translator's state every this many rows of a stream this replica translates, so a
   * re-attach translates only what follows the nearest checkpoint. Default
   * `DEFAULTS.checkpointEvery` (64); the runtime gives the useChat door the same.
   */
  checkpointEvery?: number
  /**
   * Also store a checkpoint in the database (the `checkpoints` table) each time the kept ones
   * cross a multiple of this many rows, so a replica that never served a stream re-attaches
   * near too. 0: never. Default `DEFAULTS.storedCheckpointEvery` (1024).
   */
  storedCheckpointEvery?: number
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

/** What every use case of the door works with: the layers below it and its options. */
export interface DoorDeps {
  sink: LucidTokenStreamSink
  driver: RunDriver
  parking: Parking
  runs: AgUiRunStore
  options: AgUiDoorOptions
  /** This replica's translator checkpoints (re-attach reads only what follows the nearest). */
  checkpoints?: TranslatorCheckpoints
  /** What this replica learnt of streams that cannot change (`facts.ts`). */
  facts?: DoorFacts
}

/**
 * Whether `run` sends `MESSAGES_SNAPSHOT` before its `RUN_FINISHED` (`messagesSnapshot`,
 * default `'resumes'`).
 */
export function sendsSnapshot(options: AgUiDoorOptions, run: { kind: 'start' | 'resume' }) {
  const setting = options.messagesSnapshot ?? 'resumes'
  return setting === true || (setting === 'resumes' && run.kind === 'resume')
}

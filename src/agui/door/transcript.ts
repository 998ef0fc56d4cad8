import { EventType, type Message } from '@ag-ui/core'
import type { Cursor } from '../../core/cursor.js'
import { FrameTranslator, type AgUiEvent } from '../translate/index.js'
import type { DoorRun } from '../../store/door_runs.js'
import type { AgentState } from '../../core/agent_state.js'
import { replayInto, WHOLE } from './translation.js'
import { sendsSnapshot, type AgUiDeps } from './reply.js'

/**
 * The thread's transcript up to `run`'s stream (`MESSAGES_SNAPSHOT`): for each stream of the
 * thread (the owner's), its user message under the client's id (with its content parts), then
 * what the agent wrote (the current
 * stream's from `current`, the translator serving it).
 */
export async function threadTranscript(deps: AgUiDeps, run: DoorRun, current: FrameTranslator) {
  const { messages } = await threadBefore(deps, run, current)
  return messages
}

/**
 * {@link threadTranscript}, and the agent's state as the thread's earlier streams left it (the
 * newest one's that wrote any; `null`: none did): what a client that never left holds when the
 * current stream has written none yet.
 */
async function threadBefore(deps: AgUiDeps, run: DoorRun, current: FrameTranslator) {
  const messages: Record<string, unknown>[] = []
  let state: AgentState | null = null
  for (const stream of await deps.runs.streams(run.threadId)) {
    if (stream.ownerId !== run.ownerId) continue
    if (stream.streamRunId === run.streamRunId) {
      messages.push(...withUser(stream, current.messages()))
      break
    }
    const earlier = new FrameTranslator({
      ...deps.options,
      messagesSnapshot: true,
      streamRunId: stream.streamRunId,
    })
    await replayInto(deps, earlier, stream.streamRunId, WHOLE)
    messages.push(...withUser(stream, earlier.messages()))
    state = earlier.agentState ?? state
  }
  return { messages, state }
}

/**
 * A stream's transcript with its user message: the stored `user-message` frame's (its files
 * too, the translator records it), else, for a stream stored before that frame existed, the
 * run row's text (`inputMessage`) first.
 */
function withUser(stream: DoorRun, messages: Record<string, unknown>[]) {
  if (!stream.inputMessage || messages.some((m) => m.role === 'user')) return messages
  const { id, content } = stream.inputMessage
  return [{ id, role: 'user', content }, ...messages]
}

/** `close()`'s events, with `MESSAGES_SNAPSHOT` before `RUN_FINISHED` when configured ({@link sendsSnapshot}). */
export async function closingEvents(
  deps: AgUiDeps,
  run: DoorRun,
  translator: FrameTranslator,
  identity: { threadId: string; runId: string }
): Promise<AgUiEvent[]> {
  const events = translator.close(identity)
  if (sendsSnapshot(deps.options, run) && events.at(-1)?.type === 'RUN_FINISHED') {
    const snapshot: AgUiEvent = {
      type: EventType.MESSAGES_SNAPSHOT,
      messages: (await threadTranscript(deps, run, translator)) as Message[],
    }
    events.splice(events.length - 1, 0, snapshot)
  }
  return events
}

/**
 * The prelude of a re-attach without a cursor (a client that has none of the thread, such as
 * one restoring it after a restart): `MESSAGES_SNAPSHOT` of everything before `run` (earlier
 * streams, this stream's user message, its earlier segments), sent right after `RUN_STARTED` so
 * the replayed events land after it, in order; and, when `run`'s stream has no state of the
 * agent's yet at `start`, a `STATE_SNAPSHOT` of the state the thread's earlier streams left (a
 * client that never left holds it). `translator` has replayed up to the run's start (`start`).
 */
export async function transcriptPrelude(
  deps: AgUiDeps,
  run: DoorRun,
  translator: FrameTranslator,
  start: Cursor
): Promise<AgUiEvent[]> {
  // A translator that keeps no transcript (the run sends no snapshot at its end) serves the run
  // as fast as ever: the transcript before it is rebuilt apart, by one that does.
  let before = translator
  if (!translator.options.messagesSnapshot) {
    before = new FrameTranslator({ ...translator.options, messagesSnapshot: true })
    await replayInto(deps, before, run.streamRunId, start)
  }
  const { messages, state } = await threadBefore(deps, run, before)
  const prelude: AgUiEvent[] = [
    { type: EventType.MESSAGES_SNAPSHOT, messages: messages as Message[] },
  ]
  if (state !== null && translator.agentState === null) {
    prelude.push({ type: EventType.STATE_SNAPSHOT, snapshot: structuredClone(state) })
  }
  return prelude
}

import type { Principal } from '../../core/run.js'
import { notFound, ownerOf } from '../../door/index.js'
import { FrameTranslator } from '../translate/index.js'
import { decodeAgUiId } from '../ids.js'
import type { UserMessage } from '../../core/user_message.js'
import type { AgentState } from '../../core/agent_state.js'
import { forwardedPropsOf, type AgUiInput, type ToolResultMessage } from './input.js'
import { refusal } from './refusals.js'
import { replayInto, WHOLE } from './translation.js'
import type { AgUiDeps, AgUiReply } from './reply.js'
import type { DoorRun } from '../../store/door_runs.js'
import { serveRun } from './serve.js'
import {
  startRun as startDoorRun,
  THREAD_TAKEN,
  TURN_TAKEN,
  type NewRun,
} from '../../runner/door_runs.js'

export { TURN_TAKEN }
export type { NewRun }

/** See `startRun` in `runner/door_runs.ts`. */
export const startRun = (
  deps: AgUiDeps,
  run: NewRun,
  input: unknown,
  principal: Principal | null,
  said: UserMessage | null,
  after: string | null
) => startDoorRun(deps, run, input, principal, said, after)

/** What the person's input starts: the run it records, the runner's input, what they said. */
export interface PreparedStart {
  run: NewRun
  input: unknown
  said: UserMessage | null
}

/**
 * What a new AG-UI run starts with: its own stream, what the person said (`said`) its first
 * frame. The runner's input is `{ message, context }`, plus `forwardedProps` and `state` (the
 * page's state, `RunAgentInput.state`) when the client sent any, and, with frontend tools on, `tools` (what the client offers) and `toolResults` (`{ id,
 * name, content }`, `id` being the provider's call id the agent wrote). A tool result answers
 * only a call to a client tool that the server recorded as pending (`unknown_tool_call`
 * otherwise: the refusal is returned).
 */
export async function prepareStart(
  deps: AgUiDeps,
  input: AgUiInput,
  fresh: {
    text: string | null
    toolResults: ToolResultMessage[]
    said: UserMessage | null
    state: AgentState | undefined
  },
  latest: DoorRun | null,
  principal: Principal | null
): Promise<PreparedStart | AgUiReply> {
  const toolResults: { id: string; name: string; content: string }[] = []
  if (fresh.toolResults.length > 0) {
    const open = new Map(
      (latest ? await pendingClientCalls(deps, latest) : []).map((c) => [c.toolCallId, c])
    )
    for (const result of fresh.toolResults) {
      const call = open.get(result.toolCallId)
      if (call) {
        open.delete(result.toolCallId)
        toolResults.push({ id: call.callId, name: call.name, content: result.content })
      } else if (!latest || !serversOwnCall(result.toolCallId, latest)) {
        return refusal('unknown_tool_call')
      }
    }
    // Only results of the server's own calls came back (the client's copy of what it was sent):
    // nothing new to start a run with.
    if (toolResults.length === 0 && !fresh.said) return refusal('unknown_tool_call')
  }
  const frontendTools = deps.options.frontendTools
  const tools = frontendTools ? (input.tools ?? []) : []
  const message = fresh.text
  const forwarded = forwardedPropsOf(input)
  // Checked by the door before anything was written.
  const state = fresh.state
  const run = {
    runId: input.runId,
    threadId: input.threadId,
    ownerId: ownerOf(principal),
    clientTools: tools.map((tool) => tool.name),
    inputMessage: userMessage(input, message),
  }
  const runnerInput = {
    message,
    context: input.context ?? [],
    ...(forwarded !== undefined ? { forwardedProps: forwarded } : {}),
    ...(state !== undefined ? { state } : {}),
    ...(frontendTools
      ? {
          tools: tools.map(({ name, description, parameters }) => ({
            name,
            description,
            parameters,
          })),
          toolResults,
        }
      : {}),
  }
  return { run, input: runnerInput, said: fresh.said }
}

/**
 * Start a prepared run ({@link prepareStart}) as the thread's turn after `after`, and serve it;
 * {@link TURN_TAKEN} when another message's run started first (the door judges it again).
 */
export async function startPrepared(
  deps: AgUiDeps,
  prepared: PreparedStart,
  principal: Principal | null,
  after: string | null,
  signal?: AbortSignal
): Promise<AgUiReply | typeof TURN_TAKEN> {
  const { run, input, said } = prepared
  const started = await startRun(deps, run, input, principal, said, after)
  if (started === TURN_TAKEN) return TURN_TAKEN
  // Another principal's claim on the thread landed first: answered like another's thread.
  if (started === THREAD_TAKEN) return notFound()
  if (!started) return refusal('run_id_used')
  // Served from the stream's row as the start created it: nothing is read before RUN_STARTED.
  const { stream, ...recorded } = started
  return serveRun(deps, { ...recorded, createdAt: 0 }, undefined, signal, { stream })
}

/**
 * The fresh user message's id and text (for `MESSAGES_SNAPSHOT`: a resume's, a re-attach's
 * prelude), kept whatever `messagesSnapshot` says, so a thread restored later has it.
 */
function userMessage(input: AgUiInput, text: string | null) {
  if (text === null) return null
  const message = input.messages.findLast((m) => m.role === 'user')
  return message ? { id: message.id, content: text } : null
}

/**
 * Whether `toolCallId` names a call the agent of `run`'s stream made and the server answered (a
 * backend tool's): a client (CopilotKit) sends back the results it was sent beside its own
 * tools' results. Skipped, never used: the stored result stands. Any other id answers nothing.
 */
function serversOwnCall(toolCallId: string, run: DoorRun) {
  const parts = decodeAgUiId(toolCallId)
  return parts?.kind === 'tool' && parts.runId === run.streamRunId
}

/** Calls to the client's tools still waiting for their result at the end of `run`'s stream. */
async function pendingClientCalls(deps: AgUiDeps, run: DoorRun) {
  if (!run.clientTools?.length) return []
  const translator = new FrameTranslator({
    streamRunId: run.streamRunId,
    clientTools: run.clientTools,
  })
  await replayInto(deps, translator, run.streamRunId, WHOLE)
  return translator.pendingClientCalls()
}

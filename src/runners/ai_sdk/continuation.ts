import type { ToolSet } from 'ai'
import type { AgentStreamEvent, StreamFrame } from '../../core/frames.js'
import { INTERRUPTED_TOOL_ERROR } from '../../runner/contract.js'

/**
 * The event kind `aiSdkAgent` writes, and commits, right before the AI SDK runs a tool's
 * `execute` (`onToolExecutionStart`): a replica that continues the segment after its writer
 * died knows which calls had started (their outcome is unknown: never run again). Not sent by
 * the doors unless allow-listed (`agui.custom`).
 */
export const TOOL_EXECUTION_START = 'tool-execution-start'

/**
 * The frame that records a tool's execution starting: the call's id, tool and input (the SDK may
 * start a call before its `tool-input-available` is written).
 */
export const executionStartFrame = (id: string, name: string, input: unknown): StreamFrame => ({
  t: 'event',
  event: {
    kind: TOOL_EXECUTION_START,
    id,
    name,
    input: input ?? {},
  } as unknown as AgentStreamEvent,
})

/**
 * The error recorded for a call the AI SDK had emitted but not started to run when its writer
 * died: it did not run, and the model may call it again.
 */
export const NOT_RUN_TOOL_ERROR = 'interrupted by a replica failure before it ran: it did not run'

/** Where a dead segment's calls stood, read from the stored frames (PURE). */
export interface CallsAtTakeover {
  /** Calls that have a result (`tool-output`, `-error`, `-denied`). */
  answered: Set<string>
  /**
   * The result to record for each call left without one, in stream order; `call` when its
   * `tool-input-available` was never written (it is written first, from the start's record).
   */
  interrupted: { id: string; error: string; call?: { name: string; input: unknown } }[]
  /** Approvals and question sets asked in the stream with no result and not among `settled`. */
  waiting: string[]
}

/**
 * How a segment's calls stood when its writer died (PURE): a call whose execution had started
 * (`tool-execution-start`) and has no result is interrupted ({@link INTERRUPTED_TOOL_ERROR}:
 * never run again); a server-side call (its tool has `execute`) that was emitted but not started
 * and was asked of no one gets {@link NOT_RUN_TOOL_ERROR}; an approval or question set with no
 * result that is not among `settled` (the segment's settled items) still waits for a person. A
 * call the client runs (no `execute`) is left as it is.
 */
export function callsAtTakeover(
  frames: Iterable<StreamFrame>,
  tools: ToolSet,
  settled: Set<string>
): CallsAtTakeover {
  const answered = new Set<string>()
  const started = new Map<string, { name: string; input: unknown }>()
  const asked: string[] = []
  let calls: { id: string; name: string }[] = []
  // A provider may reuse a call id in a later segment: a call that comes again after its id was
  // answered is a new one, and what the earlier one did says nothing of it.
  const anew = (id: string) => {
    if (!answered.delete(id)) return
    started.delete(id)
    for (let at = asked.indexOf(id); at >= 0; at = asked.indexOf(id)) asked.splice(at, 1)
    calls = calls.filter((call) => call.id !== id)
  }
  for (const frame of frames) {
    if (frame.t === 'approval' || frame.t === 'elicitation') {
      asked.push(frame.id)
      continue
    }
    if (frame.t !== 'event') continue
    const event = frame.event as { kind: string; id?: string; name?: string; input?: unknown }
    switch (event.kind) {
      case 'tool-output':
      case 'tool-output-error':
      case 'tool-output-denied':
        answered.add(event.id!)
        break
      case TOOL_EXECUTION_START:
        started.set(event.id!, { name: event.name!, input: event.input })
        break
      case 'tool-input-start':
        anew(event.id!)
        break
      case 'tool-input-available':
        anew(event.id!)
        calls.push({ id: event.id!, name: event.name! })
        break
    }
  }
  const interrupted: CallsAtTakeover['interrupted'] = []
  const askedSet = new Set(asked)
  const known = new Set(calls.map((call) => call.id))
  for (const { id, name } of calls) {
    if (answered.has(id)) continue
    if (started.has(id)) interrupted.push({ id, error: INTERRUPTED_TOOL_ERROR })
    else if (!askedSet.has(id) && typeof tools[name]?.execute === 'function') {
      interrupted.push({ id, error: NOT_RUN_TOOL_ERROR })
    }
  }
  // Started before its call was written (the SDK runs a call as the model streams it).
  for (const [id, call] of started) {
    if (!answered.has(id) && !known.has(id)) {
      interrupted.push({ id, error: INTERRUPTED_TOOL_ERROR, call })
    }
  }
  const waiting = asked.filter((id) => !answered.has(id) && !settled.has(id))
  return { answered, interrupted, waiting: [...new Set(waiting)] }
}

import { EventType } from '@ag-ui/core'
import type { AgUiEvent } from './types.js'

/**
 * The construct an event opens or closes (a text message, a tool call, a step, a sub-agent, a
 * reasoning block or message), by a key unique among the open ones; `null` for any other event.
 */
function construct(event: AgUiEvent): { key: string; opens: boolean } | null {
  switch (event.type) {
    case EventType.TEXT_MESSAGE_START:
    case EventType.TEXT_MESSAGE_END:
      return { key: `text ${event.messageId}`, opens: event.type === EventType.TEXT_MESSAGE_START }
    case EventType.TOOL_CALL_START:
    case EventType.TOOL_CALL_END:
      return { key: `tool ${event.toolCallId}`, opens: event.type === EventType.TOOL_CALL_START }
    case EventType.STEP_STARTED:
    case EventType.STEP_FINISHED:
      return {
        key: `step ${event.subagentRunId ?? ''} ${event.stepName}`,
        opens: event.type === EventType.STEP_STARTED,
      }
    case EventType.SUBAGENT_STARTED:
    case EventType.SUBAGENT_FINISHED:
    case EventType.SUBAGENT_ERROR:
      return { key: `sub ${event.subagentRunId}`, opens: event.type === EventType.SUBAGENT_STARTED }
    case EventType.REASONING_START:
    case EventType.REASONING_END:
      return { key: `rsn ${event.messageId}`, opens: event.type === EventType.REASONING_START }
    case EventType.REASONING_MESSAGE_START:
    case EventType.REASONING_MESSAGE_END:
      return {
        key: `rsn-msg ${event.messageId}`,
        opens: event.type === EventType.REASONING_MESSAGE_START,
      }
    default:
      return null
  }
}

/**
 * The join prelude after the first events of a frame: `prelude` is what
 * `FrameTranslator.open()` gave at the position before the frame, `sent` the frame's events
 * the client already has. Returns the prelude at the position after them: the prelude's other
 * events (`RUN_STARTED`, a `STATE_SNAPSHOT`) as they are, then the opening event of every
 * construct still open, in the order they opened (so nesting is kept). A client cut between a
 * tool call's `TOOL_CALL_START` and its `TOOL_CALL_END` gets the START again here, and then
 * only the events it did not have. PURE.
 */
export function preludeAfter(prelude: AgUiEvent[], sent: readonly AgUiEvent[]): AgUiEvent[] {
  const head: AgUiEvent[] = []
  const open = new Map<string, AgUiEvent>()
  for (const event of prelude) {
    const found = construct(event)
    if (found?.opens) open.set(found.key, event)
    else head.push(event)
  }
  for (const event of sent) {
    const found = construct(event)
    if (!found) continue
    if (found.opens) open.set(found.key, event)
    else open.delete(found.key)
  }
  return [...head, ...open.values()]
}

import { interrupt } from '@langchain/langgraph'
import type { ToolCallInterrupt, ToolDecision } from './interrupts.js'

/**
 * Inside a node or a tool, ask a person to approve a tool call and wait (LangGraph's
 * `interrupt()`): the run parks on an `approval` frame keyed by the call's id, and this returns
 * the person's decision once the run resumes (the node runs again from its start, as every
 * LangGraph node does after an interrupt: what comes before this call must be safe to repeat).
 * `{ type: 'approve' }`, `{ type: 'edit', editedAction: { name, args } }` (the person changed the
 * input: run with `args`) or `{ type: 'reject', message }` (do not run; tell the model `message`).
 *
 * @param call the call as LangChain gives it to a tool (`config.toolCall`: `{ id, name, args }`)
 */
export function requestApproval(
  call: { id?: string; name: string; args: Record<string, unknown> },
  options: { description?: string; inputSchema?: Record<string, unknown> | false } = {}
): ToolDecision {
  if (!call.id) throw new Error('requestApproval needs the tool call id (config.toolCall.id)')
  const value: ToolCallInterrupt = {
    toolCallId: call.id,
    name: call.name,
    input: call.args,
    ...options,
  }
  return interrupt<ToolCallInterrupt, ToolDecision>(value)
}

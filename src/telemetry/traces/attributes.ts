/**
 * The attribute names of the package's spans: the GenAI semantic conventions' (status
 * Development), OpenTelemetry's general ones (`error.type`, `enduser.id`) and the package's own
 * (`agent_stream.*`). docs/observability.md lists which span carries which.
 */
export const ATTR = {
  operationName: 'gen_ai.operation.name',
  agentName: 'gen_ai.agent.name',
  conversationId: 'gen_ai.conversation.id',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  errorType: 'error.type',
  enduserId: 'enduser.id',
  runId: 'agent_stream.run_id',
  streamRunId: 'agent_stream.stream_run_id',
  segment: 'agent_stream.segment',
  continued: 'agent_stream.continued',
  outcome: 'agent_stream.outcome',
  refused: 'agent_stream.refused',
  park: 'agent_stream.park',
  itemKind: 'agent_stream.item.kind',
  decision: 'agent_stream.decision',
  decidedVia: 'agent_stream.decided_via',
  approver: 'agent_stream.approver',
  cursor: 'agent_stream.cursor',
  rowsRead: 'agent_stream.rows_read',
  live: 'agent_stream.live',
} as const

/** The `error.type` of a failure: a stable code of the package's (`E_...`, `run_failed`), else `_OTHER`. */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[A-Za-z][A-Za-z0-9_.]{0,63}$/.test(code) ? code : '_OTHER'
}

import type { AgUiEvent } from '../translate/index.js'
import type { ClientProfile } from './profile.js'

const SUBAGENT = new Set(['SUBAGENT_STARTED', 'SUBAGENT_FINISHED', 'SUBAGENT_ERROR'])

/**
 * `event` as a client of `profile` can parse it (the one rule, pure): `null` to leave it out.
 *
 * - `SUBAGENT_*` left out for a client before 0.0.59 (the sub-agent's own events still come,
 *   with `subagentRunId`, which such a client ignores);
 * - a `cancelled` outcome sent as a plain `RUN_FINISHED` (no outcome), as CopilotKit's own
 *   runner ends a stopped run, for a client before 1.0.0;
 * - `pendingToolCallIds` left out of a success outcome for a client before 1.0.0: it still sees
 *   the call (`TOOL_CALL_START` ... `END` without a result), runs it, and its next input's
 *   `tool` message is accepted as before.
 *
 * Anything else is returned as it came (the same object).
 */
export function forClient(event: AgUiEvent, profile: ClientProfile): AgUiEvent | null {
  if (!profile.subagentEvents && SUBAGENT.has(event.type)) return null
  if (event.type !== 'RUN_FINISHED' || !event.outcome) return event
  const outcome = event.outcome as { type: string; pendingToolCallIds?: unknown }
  if (outcome.type === 'cancelled' && !profile.cancelledOutcome) {
    const plain = { ...event }
    delete plain.outcome
    return plain
  }
  if (outcome.type === 'success' && 'pendingToolCallIds' in outcome && !profile.pendingToolCallIds)
    return { ...event, outcome: { type: 'success' } }
  return event
}

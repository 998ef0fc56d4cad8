import { EventType } from '@ag-ui/core'
import type { JsonPatch } from '@ag-ui/core'
import { applyStateEvent, type AgentState, type StateEvent } from '../../core/agent_state.js'
import type { AgUiEvent } from './types.js'

/**
 * The name of the `CUSTOM` event that carries the door's own projection of a run
 * (`AgentStreamState`: its title, how many steps finished, summed token usage): sent before every
 * `RUN_FINISHED` (`stateSnapshot`) and after each step that changed it (`stateDeltas`), with the
 * whole projection as its `value`. Namespaced, so it never touches the agent's state
 * (`STATE_SNAPSHOT` / `STATE_DELTA` are the agent's own: `state` frames).
 */
export const RUN_STATE_EVENT = 'agent_stream.run_state'

/** The `CUSTOM` event of the door's projection of the run (see {@link RUN_STATE_EVENT}). */
export function runStateEvent(value: unknown): AgUiEvent {
  return { type: EventType.CUSTOM, name: RUN_STATE_EVENT, value }
}

/**
 * A `state` frame (the agent's state): a snapshot goes out as `STATE_SNAPSHOT`, a delta as
 * `STATE_DELTA`; the model keeps the state as it stands (for a re-attach's join prelude). The
 * writer checked the frame against the same state, so it applies; one that does not (a writer
 * that skipped the check) is passed over, the same by every reader. PURE.
 */
export function agentStateEvents(
  model: { agentState: AgentState | null },
  event: StateEvent
): AgUiEvent[] {
  // The writer enforced the bound; a reader keeps what was stored.
  const next = applyStateEvent(model.agentState, event, Number.POSITIVE_INFINITY)
  if ('rule' in next) return []
  model.agentState = next.state
  if (event.snapshot !== undefined) {
    return [{ type: EventType.STATE_SNAPSHOT, snapshot: structuredClone(event.snapshot) }]
  }
  return [{ type: EventType.STATE_DELTA, delta: structuredClone(event.delta) as JsonPatch }]
}

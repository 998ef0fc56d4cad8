import type { StreamFrame } from '../../core/frames.js'
import { applyStateEvent, isStateFrame, type AgentState } from '../../core/agent_state.js'

/** Kept for streams written before the `state` frames: the agent's state at a segment's end. */
export const LEGACY_STATE_KIND = 'agui-state'

/** No cap here: the writer checks the state a frame leaves against `maxStateBytes`. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER

/**
 * The agent's state as `frames` leave it (PURE): `state` snapshots replace it, deltas patch it,
 * a stored `agui-state` event (streams written before the `state` frames) replaces it; `null`
 * when none of them is in `frames`.
 */
export function stateOf(frames: StreamFrame[]): AgentState | null {
  let state: AgentState | null = null
  for (const frame of frames) {
    if (isStateFrame(frame)) {
      const next = applyStateEvent(state, frame.event, UNBOUNDED)
      if ('state' in next) state = next.state
    } else if (frame.t === 'event' && (frame.event.kind as string) === LEGACY_STATE_KIND) {
      state = (frame.event as unknown as { state: AgentState }).state
    }
  }
  return state
}

/**
 * A remote AG-UI agent's `STATE_SNAPSHOT` / `STATE_DELTA` as our `state` frames (PURE), so the
 * doors serve them on. The remote's deltas apply to the state it was sent (`remote`); ours to
 * the state this stream's frames left (`ours`, `null`: none yet). While the two are the same a
 * delta is passed on as it came; otherwise (the stream has no state yet, or the page's state
 * differs from it) the state the delta leaves is written as a snapshot, after which they are the
 * same again. A delta that does not apply to the remote's state is skipped (the client's own
 * applier refuses it too).
 */
export class SharedStateMirror {
  #remote: AgentState
  #ours: AgentState | null

  constructor(remote: AgentState, ours: AgentState | null) {
    this.#remote = remote
    this.#ours = ours
  }

  snapshot(snapshot: unknown): StreamFrame[] {
    const next = applyStateEvent(this.#remote, { snapshot }, UNBOUNDED)
    if (!('state' in next)) return []
    this.#remote = this.#ours = next.state
    return [{ t: 'event', event: { kind: 'state', snapshot: next.state } }]
  }

  delta(delta: unknown): StreamFrame[] {
    const next = applyStateEvent(this.#remote, { delta }, UNBOUNDED)
    if (!('state' in next)) return []
    const same = this.#ours !== null && JSON.stringify(this.#ours) === JSON.stringify(this.#remote)
    this.#remote = this.#ours = next.state
    return [
      {
        t: 'event',
        event: same
          ? { kind: 'state', delta: delta as never }
          : { kind: 'state', snapshot: next.state },
      },
    ]
  }
}

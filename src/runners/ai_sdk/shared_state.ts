import type { Operation } from 'fast-json-patch'
import type { RunContext } from '../../runner/contract.js'

/**
 * What a tool of an AI SDK agent shares with the page (AG-UI shared state, the useChat
 * `data-state` part), given through the AI SDK's own tool context (`toolsContext`, a tool's
 * `execute(input, { context })`): the page's state as the request carried it, and the agent's
 * own state, written as `state` frames into the run's stream (docs/ai-sdk.md, "Shared state").
 */
export interface SharedState {
  /** The page's state (`RunAgentInput.state`, useChat's body `state`); `undefined`: none sent. */
  readonly page: Record<string, unknown> | undefined
  /** Replace the agent's state: a `{ kind: 'state', snapshot }` frame (AG-UI `STATE_SNAPSHOT`). */
  set(snapshot: Record<string, unknown>): Promise<void>
  /**
   * Change the agent's state with RFC 6902 operations: a `{ kind: 'state', delta }` frame (AG-UI
   * `STATE_DELTA`). Rejects (`InvalidFrameError`, nothing stored) when the operations do not
   * apply to the state as it stands (a `set` must come first) or leave it over `maxStateBytes`.
   */
  patch(delta: Operation[]): Promise<void>
}

/** The {@link SharedState} of a run's segment. */
export function sharedStateOf(ctx: RunContext): SharedState {
  const page = (ctx.input as { state?: Record<string, unknown> } | null)?.state
  return {
    page,
    set: async (snapshot) => ctx.writer.write({ t: 'event', event: { kind: 'state', snapshot } }),
    patch: async (delta) => ctx.writer.write({ t: 'event', event: { kind: 'state', delta } }),
  }
}

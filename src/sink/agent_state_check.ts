import { InvalidFrameError } from '../errors.js'
import { applyStateEvent, isStateFrame, type AgentState } from '../core/agent_state.js'
import type { StreamFrame } from '../core/frames.js'
import type { StreamStore } from '../store/stream_store.js'
import { stateRows } from '../store/state_rows.js'

/** Reads the agent state a stream's stored rows left (`null`: none), for a writer that opens it. */
export type StoredStateReader = () => Promise<AgentState | null>

/**
 * The agent's state as one writer knows it (`state` event frames), so a delta is checked against
 * it when written: one that does not apply, or leaves the state over `maxStateBytes`, is refused
 * (`InvalidFrameError`, rules of `src/core/agent_state.ts`) and nothing is stored. Bounded: the
 * state itself (at most `maxStateBytes`). A writer that opens a stream with rows in it (a resume,
 * another replica's takeover) rebuilds it from the stored `state` rows, once, at its first state
 * frame; what it writes after moves it on. Checks run in write order, each after its frame's own
 * validation passed.
 */
export class AgentStateCheck {
  #state: AgentState | null = null
  #loaded: boolean
  #chain: Promise<unknown> = Promise.resolve()

  constructor(
    readonly maxStateBytes: number,
    /** The stored state when the writer opened; absent: the stream had no rows. */
    readonly stored?: StoredStateReader
  ) {
    this.#loaded = stored === undefined
  }

  /**
   * `checked` (the frame's validation) followed by the state check of a `state` frame, in the
   * order of the calls; other frames pass as they are.
   *
   * @throws InvalidFrameError (rejects) when the frame breaks the SPI or a state rule
   */
  check(frame: StreamFrame, checked: Promise<StreamFrame>): Promise<StreamFrame> {
    if (!isStateFrame(frame)) return checked
    const result = this.#chain.then(async () => {
      const valid = await checked
      if (!this.#loaded) {
        this.#state = (await this.stored?.()) ?? null
        this.#loaded = true
      }
      const next = applyStateEvent(
        this.#state,
        (valid as { event: Record<string, unknown> }).event,
        this.maxStateBytes
      )
      if ('rule' in next) throw new InvalidFrameError([{ field: 'event', rule: next.rule }])
      this.#state = next.state
      return valid
    })
    this.#chain = result.catch(() => {})
    return result
  }
}

/** Rows of a stream's `state` frames read per page when a writer rebuilds the agent's state. */
const STATE_PAGE_ROWS = 64

/**
 * The agent state a stream's stored `state` rows up to `uptoSeq` leave (`null`: none), applied
 * in order a page at a time (a stored frame that no longer applies, which only a writer that
 * skipped the check could store, is passed over as every reader does).
 */
export async function storedAgentState(
  store: StreamStore,
  runId: string,
  uptoSeq: number
): Promise<AgentState | null> {
  let state: AgentState | null = null
  let after = 0
  for (;;) {
    const rows = await stateRows(store.client, store.tables, runId, after, uptoSeq, STATE_PAGE_ROWS)
    for (const row of rows) {
      const frame = JSON.parse(row.body) as { event: Record<string, unknown> }
      const next = applyStateEvent(state, frame.event, Number.POSITIVE_INFINITY)
      if ('state' in next) state = next.state
    }
    if (rows.length < STATE_PAGE_ROWS) return state
    after = rows.at(-1)!.seq
  }
}

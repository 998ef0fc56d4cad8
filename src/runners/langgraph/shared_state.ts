import type { StreamFrame } from '../../core/frames.js'
import { isStateObject, type AgentState } from '../../core/agent_state.js'

/**
 * The graph's state shared with the page (AG-UI shared state, as LangGraph's AG-UI integration
 * has it), for the keys the app names (`stateKeys`; PURE: no I/O). Graph -> page: the listed
 * keys of each `values` chunk, written as a `state` snapshot when they changed. Page -> graph:
 * the listed keys of the page's state (`ctx.input.state`) merged into the graph's input (a new
 * run) or the resume `Command`'s `update`. Keys not listed never cross: the page cannot set the
 * graph's `messages`, nor read what the graph keeps to itself.
 */
export class SharedGraphState {
  readonly keys: ReadonlySet<string>
  #last: string | null = null

  constructor(keys: readonly string[]) {
    this.keys = new Set(keys)
  }

  /** The listed keys `values` holds (none: an empty object). */
  pick(values: unknown): AgentState {
    const picked: AgentState = {}
    if (!isStateObject(values)) return picked
    for (const key of this.keys) {
      if (Object.hasOwn(values, key) && values[key] !== undefined) picked[key] = values[key]
    }
    return picked
  }

  /** The listed keys of the page's state (`ctx.input.state`), or `null` when it has none. */
  fromPage(input: unknown): AgentState | null {
    const state = isStateObject(input) ? input.state : undefined
    const picked = this.pick(state)
    return Object.keys(picked).length > 0 ? picked : null
  }

  /**
   * The `state` frame a `values` chunk's state gives: a snapshot of its listed keys when they
   * changed since the last one written (and some are set), else nothing (a pause's chunk too).
   */
  frames(values: unknown): StreamFrame[] {
    // A pause reports its interrupts in the `values` mode too (`{ __interrupt__ }`): no state.
    if (!isStateObject(values) || Object.hasOwn(values, '__interrupt__')) return []
    const snapshot = this.pick(values)
    const json = JSON.stringify(snapshot)
    if (json === this.#last || (this.#last === null && json === '{}')) return []
    this.#last = json
    return [{ t: 'event', event: { kind: 'state', snapshot } }]
  }
}

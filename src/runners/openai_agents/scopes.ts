import { createHash } from 'node:crypto'
import type { RunContext } from '../../runner/contract.js'

/** The run id grammar leaves 191 characters; a child's id is its base plus `.h<n>`. */
const MAX_BASE = 170

/**
 * The sub-agent scopes of one OpenAI Agents run: a handoff hands the conversation to another
 * agent for the rest of the run, so each handoff opens a delegated run (`ctx.child(...)`, AG-UI
 * `SUBAGENT_STARTED`) inside the one that handed off, and everything after it is written there.
 * The scopes close (`subagent-finish`) when the run ends, innermost first. A parked run keeps the
 * open scopes' ids in its checkpoint: the resumed segment is the innermost one's (its context is
 * the run that parked), and closes the outer ones by their ids.
 */
export class Scopes {
  #stack: { runId: string; ctx: RunContext | null }[]
  #handoffs: number

  /**
   * @param ctx the segment's context (the top run's, or the parked child's when resumed)
   * @param open the scopes open when the run parked, outermost first (empty for a start)
   * @param handoffs how many handoffs the run made before this segment
   */
  constructor(ctx: RunContext, open: string[] = [], handoffs = 0) {
    const outer = open.at(-1) === ctx.runId ? open.slice(0, -1) : open
    this.#stack = [...outer.map((runId) => ({ runId, ctx: null })), { runId: ctx.runId, ctx }]
    this.#handoffs = handoffs
  }

  /** The context frames are written to now: the agent the run was handed to last. */
  get current(): RunContext {
    return this.#stack.at(-1)!.ctx!
  }

  get handoffs() {
    return this.#handoffs
  }

  /** The open sub-agent scopes' run ids, outermost first (what a checkpoint keeps). */
  get open(): string[] {
    return this.#stack
      .filter((scope) => scope.ctx === null || scope.ctx.parentRunId !== null)
      .map((scope) => scope.runId)
  }

  /** A handoff to `name` (by the call `parentToolCallId`): a delegated run of its own. */
  handOff(name: string, parentToolCallId?: string): RunContext {
    this.#handoffs += 1
    const stream = this.current.streamRunId
    const base =
      stream.length <= MAX_BASE
        ? stream
        : `h-${createHash('sha256').update(stream).digest('hex').slice(0, 40)}`
    const child = this.current.child(`${base}.h${this.#handoffs}`, {
      name,
      ...(parentToolCallId ? { parentToolCallId } : {}),
    })
    this.#stack.push({ runId: child.runId, ctx: child })
    return child
  }

  /** Close every scope, innermost first (the top run's own close is the package's). */
  async close(status: 'success' | 'failed') {
    const writer = this.current.writer
    for (const scope of [...this.#stack].reverse()) {
      if (scope.ctx) await scope.ctx.finish(status)
      else {
        await writer.write({
          t: 'event',
          event: { kind: 'subagent-finish', runId: scope.runId, status },
        })
      }
    }
  }
}

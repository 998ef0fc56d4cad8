import { compareCursors, type Cursor } from '../../core/cursor.js'
import { segmentItems, servedTrail, serveLoop } from '../../door/index.js'
import type { DoorRun } from '../../store/door_runs.js'
import type { AgUiEvent, FrameTranslator } from '../translate/index.js'
import type { AgUiDeps, SseItem } from './reply.js'
import { eventsOf, framed, runTranslator, type Identity } from './run_events.js'
import type { SegmentBounds } from './segment.js'
import type { StreamState } from './segment_cache.js'
import { aguiTranslation, replayInto } from './translation.js'

/**
 * The shared live fan-out of one AG-UI run on one door (issue 26): ONE reader and ONE
 * translator at the live tail, whose events (with their SSE ids) every viewer that caught up
 * with it is handed, the same frozen objects (the encoder writes a frozen item's bytes once for
 * every viewer: `src/http/agui_encoding.ts`).
 *
 * Translators are deterministic functions of the stream (what checkpoints rely on), so the
 * events after a position are the same whichever translator at that position makes them: a
 * viewer whose own loop reaches a position the hub passed through goes on from the hub's steps
 * after it, ids included. A viewer behind the hub's window (replaying, or slow: its client
 * reads less than the hub makes) runs its own loop from its position, as a re-attach would,
 * and meets the hub again when it catches up. The hub holds at most {@link WINDOW} steps; it
 * stops when its last viewer goes, or its segment ends.
 */

/**
 * Steps a hub keeps for viewers a little behind it, at most this many and this many bytes of
 * events (JSON; the newest step whatever its size): a viewer further behind reads on its own.
 */
export const WINDOW = 512
export const WINDOW_BYTES = 1_048_576

/** One item's events as every viewer gets them, and the position after the item. */
interface Step {
  at: Cursor
  items: readonly SseItem[]
  ends: boolean
  /** The events' JSON length, what the window's byte bound counts. */
  bytes?: number
}

/** How long a hub with no viewer lives on (one opened for a viewer that then left). */
const IDLE_MS = 5000

/** How long a viewer a step ahead of its hub waits for it (both read the same feed). */
const CATCH_UP_MS = 250

export class LiveHub {
  /** The position after the last step made. */
  position: Cursor
  /** The hub's loop stopped: `ended` after the run's last step, else an error or shutdown. */
  done: 'ended' | 'stopped' | null = null
  viewers = 0
  /** Number of `#steps[0]`. */
  #first = 0
  #steps: Step[] = []
  #bytes = 0
  #waiters: (() => void)[] = []
  readonly #abort = new AbortController()

  private constructor(
    readonly key: string,
    from: Cursor,
    private readonly hubs: Map<string, LiveHub>
  ) {
    this.position = from
  }

  /**
   * A hub for `run` at `from` (a position a viewer's translator passed): its translator
   * replayed to there (as a re-attach's), its reader following the segment live from there.
   * `null` when the stream failed there (the viewer's own loop serves that).
   */
  static async open(
    deps: AgUiDeps,
    run: DoorRun,
    identity: Identity,
    from: Cursor,
    bounds: SegmentBounds,
    stream: StreamState | null | undefined,
    hubs: Map<string, LiveHub>,
    key: string
  ): Promise<LiveHub | null> {
    const translator = runTranslator(deps, run)
    await replayInto(deps, translator, run.streamRunId, from, stream)
    if (translator.failure) return null
    // As a joining viewer's translator: opened for the run (its prelude events are not sent).
    translator.open(identity)
    const hub = new LiveHub(key, from, hubs)
    void hub.#run(deps, run, translator, identity, bounds, stream)
    // A hub no viewer came to (they left, or never caught up) stops.
    setTimeout(() => hub.#idle(), IDLE_MS).unref()
    return hub
  }

  async #run(
    deps: AgUiDeps,
    run: DoorRun,
    translator: FrameTranslator,
    identity: Identity,
    bounds: SegmentBounds,
    stream: StreamState | null | undefined
  ) {
    const from = this.position
    const { items, live } = segmentItems(deps.sink, run.streamRunId, from, {
      signal: this.#abort.signal,
    })
    let last: Step | null = null
    let atOf = from
    try {
      const translation = aguiTranslation(translator)
      const served = serveLoop<AgUiEvent>({
        items,
        trail: servedTrail(deps, translation, run.streamRunId, from, stream, live),
        step: (item, at) => {
          atOf = at
          const stepped = eventsOf(deps, run, translator, identity, item, at, bounds)
          if (stepped instanceof Promise) {
            return stepped.then((s) => ((last = { at, items: [], ends: s.ends }), s))
          }
          last = { at, items: [], ends: stepped.ends }
          return stepped
        },
        ids: (events, at, cursor) => framed(events, at.seq, cursor),
        // After each item's events (every one of them, none of them): one step.
        handOff: (at) => {
          this.#push({ at, items: pending.splice(0), ends: false })
          return false
        },
      })
      const pending: SseItem[] = []
      for await (const item of served) pending.push(Object.freeze(item))
      // The loop ended on a step that ends the run (no hand-off after it), or its items did.
      const ended = last as Step | null
      if (ended?.ends) {
        this.#push({ at: atOf, items: pending.splice(0), ends: true })
        this.done = 'ended'
      } else this.done = 'stopped'
    } catch {
      // Its viewers go on with their own loops, which meet the error themselves.
      this.done = 'stopped'
    } finally {
      this.#forget()
      this.#wake()
    }
  }

  #push(step: Step) {
    step.bytes = 0
    for (const item of step.items) step.bytes += JSON.stringify(item.event).length
    this.#steps.push(step)
    this.#bytes += step.bytes
    this.position = step.at
    while (this.#steps.length > WINDOW || (this.#steps.length > 1 && this.#bytes > WINDOW_BYTES)) {
      this.#bytes -= this.#steps.shift()!.bytes!
      this.#first++
    }
    this.#wake()
  }

  #wake() {
    const waiters = this.#waiters
    this.#waiters = []
    for (const resolve of waiters) resolve()
  }

  /** Resolves on the hub's next step or stop, or when `signal` aborts (its listener removed). */
  #changed(signal?: AbortSignal) {
    if (signal?.aborted) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done)
        resolve()
      }
      this.#waiters.push(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }

  #idle() {
    if (this.viewers > 0 || this.done) return
    this.#forget()
    this.#abort.abort()
  }

  #forget() {
    if (this.hubs.get(this.key) === this) this.hubs.delete(this.key)
  }

  /**
   * The number of the step after `at` (the last step at `at`: partials share their position),
   * when `at` is one the hub passed through and still holds; `null` otherwise. A viewer a step
   * ahead waits for the hub a moment (both read the same feed).
   */
  async after(at: Cursor): Promise<number | null> {
    if (this.done) return null
    if (compareCursors(this.position, at) < 0) {
      const timeout = AbortSignal.timeout(CATCH_UP_MS)
      while (!this.done && compareCursors(this.position, at) < 0 && !timeout.aborted) {
        await this.#changed(timeout)
      }
      if (this.done) return null
    }
    for (let i = this.#steps.length - 1; i >= 0; i--) {
      const order = compareCursors(this.#steps[i].at, at)
      if (order === 0) return this.#first + i + 1
      if (order < 0) return null
    }
    return null
  }

  /**
   * A viewer's events from step `n` on, until the run's last step (`null` returned) or until
   * the viewer can no longer be served from here (its position returned: it fell behind the
   * window, or the hub stopped): then it goes on with a loop of its own from that position.
   */
  async *serve(
    n: number,
    from: Cursor,
    signal?: AbortSignal
  ): AsyncGenerator<SseItem, Cursor | null> {
    this.viewers++
    let position = from
    try {
      while (!signal?.aborted) {
        if (n < this.#first) return position
        const step = this.#steps[n - this.#first]
        if (step) {
          n++
          for (const item of step.items) yield item
          position = step.at
          if (step.ends) return null
          continue
        }
        if (this.done) return this.done === 'ended' ? null : position
        await this.#changed(signal)
      }
      return null
    } finally {
      this.viewers--
      // The last viewer gone: the hub's reader stops (a later viewer opens another).
      if (this.viewers === 0) this.#idle()
    }
  }
}

/** The hubs of each door (its deps), by run and segment. */
const HUBS = new WeakMap<AgUiDeps, Map<string, LiveHub>>()
/** Hubs being opened (their replay under way), so a storm of viewers opens one. */
const OPENING = new WeakMap<AgUiDeps, Set<string>>()

export const hubKey = (run: DoorRun) => `${run.runId}\u0000${run.streamRunId}\u0000${run.afterSeq}`

/**
 * The hand-off a live viewer's own loop asks after each item: whether the door's hub for the
 * run holds the position (then `join` is set to where to go on from), else a hub opened there
 * in the background for the next time.
 */
export function handOffTo(
  deps: AgUiDeps,
  run: DoorRun,
  identity: Identity,
  bounds: SegmentBounds,
  stream: StreamState | null | undefined
) {
  let hubs = HUBS.get(deps)
  if (!hubs) HUBS.set(deps, (hubs = new Map()))
  let opening = OPENING.get(deps)
  if (!opening) OPENING.set(deps, (opening = new Set()))
  const key = hubKey(run)
  const state: { join: HubJoin | null } = { join: null }
  const handOff = async (at: Cursor): Promise<boolean> => {
    const hub = hubs.get(key)
    if (hub) {
      const n = await hub.after(at)
      if (n === null) return false
      state.join = { hub, n, at }
      return true
    }
    if (!opening.has(key)) {
      opening.add(key)
      LiveHub.open(deps, run, identity, at, bounds, stream, hubs, key)
        .then((opened) => {
          if (opened && !hubs.has(key)) hubs.set(key, opened)
        })
        .catch(() => {})
        .finally(() => opening.delete(key))
    }
    return false
  }
  return { handOff, state }
}

/** Where a viewer goes on from its door's hub: step `n`, after position `at`. */
export interface HubJoin {
  hub: LiveHub
  n: number
  at: Cursor
}

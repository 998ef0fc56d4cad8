import { compareCursors, type Cursor } from '../core/cursor.js'
import { jsonLength } from '../core/json_length.js'
import type { SentEvent } from './reply.js'
import { ReadSpan, type TracedRead } from '../telemetry/traces/index.js'

/**
 * A door's shared live fan-out of one stream (issue 26): ONE reader and ONE translator at the
 * live tail, whose events (with their SSE ids) every viewer that caught up with it is handed,
 * the same frozen objects (the encoders write a frozen item's bytes once for all its viewers:
 * `src/http/agui_encoding.ts`, `src/http/ui_message_encoding.ts`).
 *
 * Translators are deterministic functions of the stream (what checkpoints rely on), so the
 * events after a position are the same whichever translator at that position makes them: a
 * viewer whose own loop reaches a position the hub passed through goes on from the hub's steps
 * after it, ids included. A viewer behind the hub's window (replaying, or slow: its client
 * reads less than the hub makes) runs its own loop from its position, as a re-attach would,
 * and meets the hub again when it catches up. The hub stops when its last viewer goes or its
 * stream's served events end.
 */

/**
 * Steps a hub keeps for viewers a little behind it, at most this many and this many bytes of
 * events (JSON; the newest step whatever its size): a viewer further behind reads on its own.
 */
export const WINDOW = 512
export const WINDOW_BYTES = 1_048_576
/** How long a viewer a step ahead of its hub waits for it (both read the same feed). */
const CATCH_UP_MS = 250

/**
 * How a door serves a stream from a position: its serve loop (the loop's `handOff` hook is
 * `handOff`) with a translator in the state `seed` (a hub opened from a viewer's translator at
 * `from`: no read), or, without a seed, replayed to `from` as a re-attach's (a viewer's own
 * loop again, after it fell behind its hub); `null` when it cannot start there (the stream
 * failed before: the viewer's own loop serves that).
 */
export type LiveSource<E> = (
  from: Cursor,
  signal: AbortSignal | undefined,
  handOff: (at: Cursor) => boolean | Promise<boolean>,
  seed: unknown,
  /** The viewer's read span the loop counts into (`null`: the hub's own reading, untraced). */
  span: ReadSpan | null
) => Promise<AsyncIterable<SentEvent<E>> | null>

/** One item's events as every viewer gets them, and the position after the item. */
interface Step<E> {
  at: Cursor
  items: readonly SentEvent<E>[]
  /** The served events end after this step. */
  ends: boolean
  /** The events' JSON length (`jsonLength`), what the window's byte bound counts. */
  bytes: number
}

export class LiveHub<E> {
  /** The position after the last step made. */
  position: Cursor
  /** The hub's loop stopped: `ended` after its last step, `stopped` on an error or idle. */
  done: 'ended' | 'stopped' | null = null
  viewers = 0
  /** Number of `#steps[0]`. */
  #first = 0
  #steps: Step<E>[] = []
  #bytes = 0
  #waiters: (() => void)[] = []
  readonly #abort = new AbortController()

  private constructor(
    readonly key: string,
    from: Cursor,
    private readonly hubs: Map<string, LiveHub<E>>,
    /** Viewers of the stream on this door now, on the hub or on loops of their own. */
    private readonly interest: () => number
  ) {
    this.position = from
  }

  /** A hub at `from` over `source`, or `null` when the source cannot start there. */
  static async open<E>(
    source: LiveSource<E>,
    from: Cursor,
    seed: unknown,
    hubs: Map<string, LiveHub<E>>,
    key: string,
    interest: () => number
  ): Promise<LiveHub<E> | null> {
    const hub = new LiveHub<E>(key, from, hubs, interest)
    const pending: SentEvent<E>[] = []
    const handOff = (at: Cursor) => {
      hub.#push(at, pending.splice(0), false)
      return false
    }
    const events = await source(from, hub.#abort.signal, handOff, seed, null)
    if (!events) return null
    void hub.#run(events, pending)
    // Its viewers may all have gone while it opened.
    hub.idle()
    return hub
  }

  async #run(events: AsyncIterable<SentEvent<E>>, pending: SentEvent<E>[]) {
    try {
      for await (const item of events) pending.push(Object.freeze(item))
      if (this.#abort.signal.aborted) this.done = 'stopped'
      else {
        // The served events ended (the run's last step, or the stream's readers ended): the
        // viewers end with them, as their own loops would.
        this.#push(this.position, pending.splice(0), true)
        this.done = 'ended'
      }
    } catch {
      // Its viewers go on with their own loops, which meet the error themselves.
      this.done = 'stopped'
    } finally {
      this.#forget()
      this.#wake()
    }
  }

  #push(at: Cursor, items: SentEvent<E>[], ends: boolean) {
    let bytes = 0
    for (const item of items) bytes += jsonLength(item.event)
    this.#steps.push({ at, items, ends, bytes })
    this.#bytes += bytes
    this.position = at
    while (this.#steps.length > WINDOW || (this.#steps.length > 1 && this.#bytes > WINDOW_BYTES)) {
      this.#bytes -= this.#steps.shift()!.bytes
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

  /** With no viewer of its stream left on this door, the hub's reader stops. */
  idle() {
    if (this.viewers > 0 || this.interest() > 0 || this.done) return
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
    // The last step at `at` (partials share a position): a binary search of the window, so a
    // viewer replaying far behind pays one comparison per item.
    const steps = this.#steps
    if (steps.length === 0 || compareCursors(at, steps[0].at) < 0) return null
    let low = 0
    let high = steps.length - 1
    while (low < high) {
      const middle = (low + high + 1) >> 1
      if (compareCursors(steps[middle].at, at) <= 0) low = middle
      else high = middle - 1
    }
    return compareCursors(steps[low].at, at) === 0 ? this.#first + low + 1 : null
  }

  /**
   * A viewer's events from step `n` on, until the hub's last step (`null` returned) or until
   * the viewer can no longer be served from here (its position returned: it fell behind the
   * window, or the hub stopped): then it goes on with a loop of its own from that position.
   */
  async *serve(
    n: number,
    from: Cursor,
    signal?: AbortSignal,
    span?: ReadSpan | null
  ): AsyncGenerator<SentEvent<E>, Cursor | null> {
    this.viewers++
    let position = from
    // One abort listener for the viewer's whole stay, not one per wait (issue 26: a listener
    // added and removed per viewer per step showed in a busy replica's profile).
    let wake: (() => void) | null = null
    const onAbort = () => wake?.()
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      while (!signal?.aborted) {
        if (n < this.#first) return position
        const step = this.#steps[n - this.#first]
        if (step) {
          n++
          // One item read, for the viewer's span (as its own loop counts).
          span?.row()
          for (const item of step.items) yield item
          position = step.at
          if (step.ends) return null
          continue
        }
        if (this.done) return this.done === 'ended' ? null : position
        await new Promise<void>((resolve) => {
          wake = resolve
          this.#waiters.push(resolve)
        })
        wake = null
      }
      return null
    } finally {
      signal?.removeEventListener('abort', onAbort)
      this.viewers--
      // The last viewer gone: the hub's reader stops (a later viewer opens another).
      if (this.viewers === 0) this.idle()
    }
  }
}

/** Each door's hubs (by its deps object), by the door's key of what is served. */
const HUBS = new WeakMap<object, Map<string, LiveHub<any>>>()
/** Hubs being opened (their replay under way), so a storm of viewers opens one. */
const OPENING = new WeakMap<object, Set<string>>()
/** Live viewers of each door's streams now, by key: a hub none of them needs stops. */
const VIEWING = new WeakMap<object, Map<string, number>>()

/**
 * A live viewer's events from `from` on: its own loop (`own`, the door's serve loop with the
 * hand-off hook given) until it reaches a position its door's hub for `key` holds, then the
 * hub's; fallen behind the hub, a loop of its own again from where it is (`source`, a
 * translator replayed there), and so on. The first viewer to ask once it caught up with the
 * replica's tail (`caughtUp`: it reads from the replica's feed of the stream, not store pages),
 * or while other viewers of the stream are on their own loops, opens the hub (in the
 * background) at its position, its translator a copy of the viewer's (`snapshot`: the state of
 * the translator its loop serves from now). A lone viewer still replaying stored rows opens
 * none: the hub would only read and translate the same rows beside it.
 */
export async function* servedLive<E>(
  door: object,
  key: string,
  source: LiveSource<E>,
  own: (
    handOff: (at: Cursor) => boolean | Promise<boolean>,
    span: ReadSpan | null
  ) => AsyncIterable<SentEvent<E>>,
  snapshot: () => unknown,
  caughtUp: (at: Cursor) => boolean,
  signal?: AbortSignal,
  /** What the viewer reads: its one span, over its own loops and the hub's steps alike. */
  read?: TracedRead
): AsyncGenerator<SentEvent<E>> {
  let hubs = HUBS.get(door) as Map<string, LiveHub<E>> | undefined
  if (!hubs) HUBS.set(door, (hubs = new Map()))
  let opening = OPENING.get(door)
  if (!opening) OPENING.set(door, (opening = new Set()))
  let viewing = VIEWING.get(door)
  if (!viewing) VIEWING.set(door, (viewing = new Map()))
  const known = hubs
  const pending = opening
  const counts = viewing
  const interest = () => counts.get(key) ?? 0
  let joining: { hub: LiveHub<E>; n: number; at: Cursor } | null = null
  const joins = async (hub: LiveHub<E>, at: Cursor): Promise<boolean> => {
    const n = await hub.after(at)
    if (n === null) return false
    joining = { hub, n, at }
    return true
  }
  // Asked after every item a viewer's own loop serves: synchronous unless there is a hub to
  // join (a replay's every item would otherwise wait a microtask for a `false`).
  const handOff = (at: Cursor): boolean | Promise<boolean> => {
    const hub = known.get(key)
    if (hub) return joins(hub, at)
    // Opened by a viewer at the replica's tail, or by one of several viewers of the stream
    // (their loops meet on it), never beside a lone viewer replaying stored rows.
    if (!pending.has(key) && (caughtUp(at) || interest() > 1)) {
      pending.add(key)
      LiveHub.open(source, at, snapshot(), known, key, interest)
        .then((opened) => {
          if (opened && !known.has(key)) known.set(key, opened)
        })
        .catch(() => {})
        .finally(() => pending.delete(key))
    }
    return false
  }
  counts.set(key, interest() + 1)
  const span = read ? new ReadSpan(read) : null
  try {
    let events: AsyncIterable<SentEvent<E>> | null = own(handOff, span)
    while (events) {
      joining = null
      yield* events
      const joined = joining as { hub: LiveHub<E>; n: number; at: Cursor } | null
      if (!joined || signal?.aborted) return
      const fell = yield* joined.hub.serve(joined.n, joined.at, signal, span)
      if (fell === null || signal?.aborted) return
      events = await source(fell, signal, handOff, undefined, span)
    }
  } finally {
    span?.end()
    const left = interest() - 1
    if (left > 0) counts.set(key, left)
    else counts.delete(key)
    known.get(key)?.idle()
  }
}

import type { Cursor } from '../core/cursor.js'
import type { CheckpointTrail, ReplayItem } from '../checkpoints/index.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { positionOf } from '../sink/read_path.js'
import type { PrimedFollow } from '../sink/primed_follow.js'
import type { SentEvent } from './reply.js'
import { ReadSpan, type TracedRead } from '../telemetry/traces/index.js'

/** One item's events, and whether they end what is served. */
export interface ServedStep<E> {
  events: E[]
  ends: boolean
}

/** What the serve loop needs of a door: its items, its trail, its translator step, its ids. */
export interface ServeLoop<E> {
  items: AsyncIterable<ReplayItem>
  /** Where what is served leaves checkpoints (`servedTrail`), or `null`. */
  trail: CheckpointTrail<unknown> | null
  /** Translate one item (at `at`, the position after it). */
  step(item: ReplayItem, at: Cursor): ServedStep<E> | Promise<ServedStep<E>>
  /** An item's events with their SSE ids (`cursor`: the position after the item, formatted). */
  ids(events: E[], at: Cursor, cursor: string): SentEvent<E>[]
  /** What is read, for its span (`agent_stream.reattach` / `agent_stream.replay`). */
  read?: TracedRead
  /**
   * The span to count the items into instead (a live viewer's, which outlives this loop: its
   * door's fan-out serves it too; `null`: none, the fan-out's own reading), left open here.
   */
  span?: ReadSpan | null
  /**
   * Asked after each item's events were handed on (`at`: the position after it): `true` ends
   * this loop there, its reader let go (a live viewer that caught up with its door's shared
   * live fan-out goes on from it).
   */
  handOff?(at: Cursor): boolean | Promise<boolean>
}

/**
 * The one serve loop of every door: each item read from the sink is translated by the door's
 * step, the checkpoint trail kept around it, and its events framed with their ids, until a step
 * says the served stream ends (or the items do). Positions go on as `Cursor` objects
 * (`positionOf`), never parsed back from their strings.
 */
export async function* serveLoop<E>(loop: ServeLoop<E>): AsyncGenerator<SentEvent<E>> {
  const { trail } = loop
  // A span of the request that serves the read (its active context), ended when the read does
  // (unless it is a viewer's own, given: that viewer ends it).
  const owned = loop.span === undefined
  const span = owned ? (loop.read ? new ReadSpan(loop.read) : null) : loop.span
  try {
    for await (const item of loop.items) {
      span?.row()
      const at = positionOf(item)
      trail?.before(at)
      const stepped = loop.step(item, at)
      const { events, ends } = stepped instanceof Promise ? await stepped : stepped
      trail?.after(item, at)
      // (Each yielded, not `yield*` over the array: that wraps it in an async iterator.)
      for (const sent of loop.ids(events, at, item.cursor)) yield sent
      if (ends) return
      if (loop.handOff) {
        const handed = loop.handOff(at)
        if (handed === true || (handed !== false && (await handed))) return
      }
    }
  } catch (error) {
    span?.fail(error)
    throw error
  } finally {
    if (owned) span?.end()
  }
}

/** SSE ids on a frame's last event only (the position after the frame). */
export function idOnLast<E>(events: E[], _at: Cursor, cursor: string): SentEvent<E>[] {
  return events.map((event, i) => (i === events.length - 1 ? { event, id: cursor } : { event }))
}

/** Events sent without an id (a join prelude). */
export function withoutIds<E>(events: E[]): SentEvent<E>[] {
  return events.map((event) => ({ event }))
}

/**
 * A segment's items from `from` on: read from the store up to `until` when its end is known (in
 * pages growing from a small first one; `appendedEnds`: the end markers after appended frames
 * too, as a cancelled park's run reads through them), else stored then followed live. Components
 * a later one replaced come too (a door translates them as live readers met them).
 */
export function segmentItems(
  sink: Pick<LucidTokenStreamSink, 'replay' | 'segments'>,
  streamRunId: string,
  from: Cursor,
  read: {
    until?: Cursor | null
    appendedEnds?: boolean
    signal?: AbortSignal
    /** The follow's first reads, started early (`sink.prime`); released when not followed. */
    primed?: PrimedFollow
  }
): { items: AsyncIterable<ReplayItem>; live: boolean } {
  const { until, signal, primed } = read
  if (!until) {
    return {
      items: sink.segments(streamRunId, { after: from, signal, superseded: true, primed }),
      live: true,
    }
  }
  primed?.release()
  const items = sink.replay(streamRunId, {
    after: from,
    until,
    appendedEnds: read.appendedEnds,
    superseded: true,
    growing: true,
    signal,
  })
  return { items, live: false }
}

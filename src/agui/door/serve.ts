import { compareCursors, formatCursor, isStart, type Cursor } from '../../core/cursor.js'
import {
  invalidCursor,
  prefetchSilently,
  segmentItems,
  servedTrail,
  serveLoop,
  servedLive,
  type LiveSource,
  withoutIds,
} from '../../door/index.js'
import { positionOf } from '../../sink/read_path.js'
import {
  preludeAfter,
  type AgUiEvent,
  type FrameTranslator,
  type TranslatorCheckpoint,
} from '../translate/index.js'
import type { DoorRun } from '../../store/door_runs.js'
import type { PrimedFollow } from '../../sink/primed_follow.js'
import type { ReadSpan } from '../../telemetry/traces/index.js'
import type { DoorPosition } from './position.js'
import { aguiTranslation, replayInto } from './translation.js'
import type { AgUiDeps, AgUiReply, SseItem } from './reply.js'
import { segmentBounds, type SegmentBounds } from './segment.js'
import type { StreamState } from './segment_cache.js'
import { closingEvents, transcriptPrelude } from './transcript.js'
import { eventsOf, framed, runTranslator, type Identity } from './run_events.js'

/** How a connection starts: its first events, then the live stream from `from` (none: done). */
interface Joined {
  items: SseItem[]
  from: Cursor | null
  bounds: SegmentBounds
  /** The stream's row as read when joining. */
  stream?: StreamState | null
}

/**
 * One AG-UI run served from `at` (or its start) as a door reply: `RUN_STARTED`, the join
 * prelude, then the rest of the segment until it ends. Every event after the prelude carries an
 * SSE id (`position.ts`), so a client cut after any event re-attaches with the last id it saw
 * and gets exactly the events after it. The stream before `at` is replayed silently into the
 * translator (so ids, open constructs and state are what they were) before the reply is made:
 * an id inside a frame the door cannot have minted is refused (400 `invalid_cursor`).
 */
export async function serveRun(
  deps: AgUiDeps,
  run: DoorRun,
  at: DoorPosition | undefined,
  signal?: AbortSignal,
  /**
   * `prelude`: start with the thread's transcript before this run (a client with nothing);
   * `stream`: the stream's row as the caller just read it (else `join` reads it); `until`: read
   * the stored frames up to it and no further (a Durable Streams catch-up read: what is there
   * now, `src/durable_streams/dialects/`).
   */
  {
    prelude = false,
    stream,
    until,
  }: { prelude?: boolean; stream?: StreamState | null; until?: Cursor } = {}
): Promise<AgUiReply> {
  const translator = runTranslator(deps, run)
  const identity = { threadId: run.threadId, runId: run.runId }
  // A re-attach inside a run it follows (not a read up to `until`, not a stream that is not
  // open: its segment ended, read from the store): the follow's first reads go while the
  // translator is rebuilt.
  const follows = !until && (stream === undefined || stream?.status === 'open')
  const inside = at && 'cursor' in at && compareCursors(at.cursor, { seq: run.afterSeq }) > 0
  const primed = follows && inside ? deps.sink.prime(run.streamRunId, at.cursor, signal) : undefined
  const joined = await join(deps, run, translator, identity, at, prelude, stream).catch(
    (error: unknown) => {
      primed?.release()
      throw error
    }
  )
  if (!joined?.from) primed?.release()
  if (!joined) return invalidCursor()
  return {
    kind: 'stream',
    streamRunId: run.streamRunId,
    events: liveEvents(deps, run, translator, identity, joined, signal, until, primed),
  }
}

/**
 * The reply's events: the join's, then the segment's (stored, or followed live through the
 * door's fan-out); the primed reads (`sink.prime`) the follow did not take are let go however
 * it ends (in this generator, not a wrapper: every replayed event passes each layer).
 */
async function* liveEvents(
  deps: AgUiDeps,
  run: DoorRun,
  translator: FrameTranslator,
  identity: Identity,
  joined: Joined,
  signal?: AbortSignal,
  until?: Cursor,
  primed?: PrimedFollow
): AsyncGenerator<SseItem> {
  try {
    yield* joined.items
    if (!joined.from) return
    const { end, parkedAt } = joined.bounds
    // A segment that ended is stored whole (a cancelled park through its end to the
    // cancellation's): read from the store. One that is still written is followed live (or
    // read up to `until`).
    let stored: Cursor | null = end === null ? null : { seq: end }
    if (until && (!stored || compareCursors(until, stored) < 0)) stored = until
    const { items, live } = segmentItems(deps.sink, run.streamRunId, joined.from, {
      until: stored,
      appendedEnds: parkedAt !== undefined,
      signal,
      primed,
    })
    // What is served leaves checkpoints too: a later re-attach on this replica starts near.
    if (!live) {
      const translation = aguiTranslation(translator)
      yield* serveLoop<AgUiEvent>({
        items,
        trail: servedTrail(deps, translation, run.streamRunId, joined.from, joined.stream, live),
        step: (item, at) => eventsOf(deps, run, translator, identity, item, at, joined.bounds),
        ids: (events, at, cursor) => framed(events, at.seq, cursor),
        read: { streamRunId: run.streamRunId, cursor: formatCursor(joined.from), live },
      })
      return
    }
    // Live: its own loop until it catches up with the door's shared fan-out of the run
    // (`src/door/live_hub.ts`), then the hub's events; behind the hub again (a slow client), its
    // own loop from where it is, with a translator replayed to there (as a re-attach's).
    let current = translator
    const source: LiveSource<AgUiEvent> = async (from, reading, handOff, seed, span) => {
      const own = runTranslator(deps, run)
      if (seed === undefined) {
        await replayInto(deps, own, run.streamRunId, from, joined.stream)
        if (own.failure) return null
        // As a joining viewer's translator: opened for the run (its prelude is not sent).
        own.open(identity)
        current = own
      } else own.restore(seed as TranslatorCheckpoint)
      const followed = segmentItems(deps.sink, run.streamRunId, from, { signal: reading })
      return servedFrom(own, from, followed.items, handOff, span)
    }
    const servedFrom = (
      serving: FrameTranslator,
      from: Cursor,
      read: typeof items,
      handOff: (at: Cursor) => boolean | Promise<boolean>,
      span: ReadSpan | null
    ) =>
      serveLoop<AgUiEvent>({
        items: read,
        trail: servedTrail(
          deps,
          aguiTranslation(serving),
          run.streamRunId,
          from,
          joined.stream,
          true
        ),
        step: (item, at) => eventsOf(deps, run, serving, identity, item, at, joined.bounds),
        ids: (events, at, cursor) => framed(events, at.seq, cursor),
        span,
        handOff,
      })
    const key = `${run.runId}\u0000${run.streamRunId}\u0000${run.afterSeq}`
    const from = joined.from
    yield* servedLive(
      deps,
      key,
      source,
      (handOff, span) => servedFrom(translator, from, items, handOff, span),
      () => current.checkpoint(),
      (at) => deps.sink.caughtUp(run.streamRunId, at),
      signal,
      { streamRunId: run.streamRunId, cursor: formatCursor(from), live }
    )
  } finally {
    primed?.release()
  }
}

const bare = (events: AgUiEvent[]): SseItem[] => withoutIds(events)

/** Where a connection joins the run; `null` for an id the door cannot have minted. */
async function join(
  deps: AgUiDeps,
  run: DoorRun,
  translator: FrameTranslator,
  identity: Identity,
  at: DoorPosition | undefined,
  prelude: boolean,
  stream?: StreamState | null
): Promise<Joined | null> {
  const streamRunId = run.streamRunId
  const start: Cursor = { seq: run.afterSeq }
  // The stream's row: its revision and incarnation key what the replica keeps of it.
  if (stream === undefined) stream = await deps.sink.head(streamRunId)
  // A cursor inside the run (the usual re-attach): the stored checkpoint the replay to it will
  // want is read while the run's bounds are.
  if (at && 'cursor' in at && compareCursors(at.cursor, start) > 0) {
    prefetchSilently(deps, aguiTranslation(translator), streamRunId, at.cursor, stream)
  }
  const bounds = await segmentBounds(deps, streamRunId, run.afterSeq, stream)
  const { end } = bounds
  let position: DoorPosition = at ?? { cursor: start }
  // An id of an earlier AG-UI run of this stream: the client has none of this one.
  if ('k' in position ? position.seq <= run.afterSeq : compareCursors(position.cursor, start) < 0)
    position = { cursor: start }
  // An id of a later one: the client had all of this one.
  if ('k' in position && end !== null && position.seq > end) position = { cursor: { seq: end } }
  // An id inside the closing of a park cancelled since: that ending is no longer this run's
  // (it goes on to the cancellation), so the client gets everything after the park's end.
  if ('k' in position && position.seq === bounds.parkedAt)
    position = { cursor: { seq: position.seq } }
  if ('k' in position) return withinFrame(deps, run, translator, identity, position, bounds, stream)
  const cursor = position.cursor
  if (end !== null && cursor.seq >= end) {
    // The client had the whole run: it gets its start and its end again, nothing between.
    await replayInto(deps, translator, streamRunId, { seq: end - 1 }, stream)
    if (translator.failure) return failed(translator, identity, String(end), bounds)
    const opening = translator.open(identity)
    const closing = await closingEvents(deps, run, translator, identity)
    return { items: [...bare(opening), ...framed(closing, end, String(end))], from: null, bounds }
  }
  // Nothing before the stream's start to replay (a new run): the translator is as it starts.
  if (!isStart(cursor)) {
    await replayInto(deps, translator, streamRunId, cursor, stream)
  }
  // The client had the run's error: it gets its start and the error again.
  if (translator.failure) return failed(translator, identity, formatCursor(cursor), bounds)
  const opening = translator.open(identity)
  // A client with nothing of the thread: what came before this run first, so it is in order.
  if (prelude && !at)
    opening.splice(1, 0, ...(await transcriptPrelude(deps, run, translator, start)))
  return { items: bare(opening), from: cursor, bounds, stream }
}

function failed(
  translator: FrameTranslator,
  identity: Identity,
  id: string,
  bounds: SegmentBounds
): Joined {
  return {
    items: [{ event: translator.open(identity)[0] }, { event: translator.failure!, id }],
    from: null,
    bounds,
  }
}

/**
 * A client that had the first `k` events of the frame at row `seq`: the stream replayed to the
 * row before, the frame translated, a prelude re-opening what is open after those `k` events
 * (a tool call whose START it had and whose END it had not, say), then the frame's other
 * events. `null` when the door cannot have minted that id: no such frame, a frame after the
 * run's error, `k` not below the frame's event count.
 */
async function withinFrame(
  deps: AgUiDeps,
  run: DoorRun,
  translator: FrameTranslator,
  identity: Identity,
  { seq, k }: { seq: number; k: number },
  bounds: SegmentBounds,
  stream: StreamState | null
): Promise<Joined | null> {
  const streamRunId = run.streamRunId
  await replayInto(deps, translator, streamRunId, { seq: seq - 1 }, stream)
  if (translator.failure) return null
  const opening = translator.open(identity)
  const read = deps.sink.replay(streamRunId, {
    after: { seq: seq - 1 },
    until: { seq },
    appendedEnds: bounds.parkedAt !== undefined,
    superseded: true,
  })
  let item = null
  for await (const found of read) {
    item = found
    break
  }
  const at = item ? positionOf(item) : null
  if (!item || !at || at.seq !== seq) return null
  const superseded = 'superseded' in item
  const { events, ends } = await eventsOf(deps, run, translator, identity, item, at, bounds)
  // A component replaced since the id was minted is no longer sent: it had one event more.
  if (k >= events.length + (superseded ? 1 : 0)) return null
  const sent = Math.min(k, events.length)
  return {
    items: [
      ...bare(preludeAfter(opening, events.slice(0, sent))),
      ...framed(events, seq, item.cursor, sent),
    ],
    from: ends ? null : at,
    bounds,
    stream,
  }
}

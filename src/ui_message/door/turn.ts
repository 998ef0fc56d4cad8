import { formatCursor, isStart, parseCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import {
  idOnLast,
  prefetchSilently,
  replaySilently,
  segmentItems,
  servedTrail,
  serveLoop,
  servedLive,
  type LiveSource,
  streamGoesOn,
  type ServedStep,
  type Translation,
} from '../../door/index.js'
import type { StreamState } from '../../store/rows.js'
import type { ReadSpan } from '../../telemetry/traces/index.js'
import type { PrimedFollow } from '../../sink/primed_follow.js'
import { UiMessageTranslator, type UiChunk } from '../translate/index.js'
import type { UiChunkItem, UiDoorDeps } from './reply.js'

/**
 * The useChat translator as the kernel drives it (`src/door/translation.ts`): its rules shape
 * its state; a segment end it replays silently closes what is open (the turn went on from it);
 * replaced components are read too, translated as live: a checkpoint's state is then the same
 * whether a component before it was replaced before or after it was taken.
 */
export function uiMessageTranslation(translator: UiMessageTranslator): Translation<string> {
  return {
    translator,
    shape: translator.rules,
    read: { superseded: true },
    take: (item, at) => {
      if (item.t === 'end') translator.end(false)
      else translator.push(item as StreamFrame, at)
    },
  }
}

/**
 * A turn (one assistant message: a run's whole stream, every segment of it) as UI message
 * chunks, from `from` on: `start` with the message id (the stream's run id), then each frame's
 * chunks, read through the sink's one read path (stored, then live; a component a later one
 * replaced is sent as live readers got it, the later one replacing it in place by its id).
 *
 * The stream before `from` is replayed silently into the translator first, so part ids and open
 * parts are what they were: from the nearest of this replica's checkpoints at or before `from`
 * (the kernel's `replaySilently`), so a resume costs the rows after a checkpoint, not the whole
 * turn; what is served leaves checkpoints too. `stream`: the stream's row as the caller just
 * read it (its incarnation keys the checkpoints; else it is read here).
 *
 * At a segment end the turn goes on when the stream does (the kernel's `streamGoesOn`), else it
 * ends with `finish` (parked on an item nobody answered yet, finished, failed). The frame's
 * cursor is the SSE `id:` of its last chunk.
 *
 * `read` (a Durable Streams read of the turn, `src/durable_streams/dialects/`): `until` reads
 * the stored frames up to it and no further (a catch-up read: what is there now); `settle` is
 * awaited at each segment end before the verdict is read (a reader that waits across a park:
 * `false` stops the turn there, emitting nothing of that end; `'finish'` finishes the turn
 * there whatever follows: a stream of one segment).
 */
export async function* turnChunks(
  deps: UiDoorDeps,
  streamRunId: string,
  from: Cursor,
  signal?: AbortSignal,
  stream?: StreamState | null,
  read: TurnRead = {},
  /** The follow's first reads, started by the caller (`resumeReads`): else started here. */
  started?: PrimedFollow
): AsyncGenerator<UiChunkItem> {
  const translator = new UiMessageTranslator(deps.options)
  // A resume inside the turn: its follow's first reads go while the translator is rebuilt.
  const resumes = !isStart(from)
  const primed =
    started ?? (resumes && !read.until ? deps.sink.prime(streamRunId, from, signal) : undefined)
  // The primed reads the follow did not take let go however the turn ends.
  try {
    yield* servedTurn(deps, streamRunId, from, translator, signal, stream, read, primed)
  } finally {
    primed?.release()
  }
}

async function* servedTurn(
  deps: UiDoorDeps,
  streamRunId: string,
  from: Cursor,
  translator: UiMessageTranslator,
  signal: AbortSignal | undefined,
  stream: StreamState | null | undefined,
  read: TurnRead,
  primed: PrimedFollow | undefined
): AsyncGenerator<UiChunkItem> {
  const translation = uiMessageTranslation(translator)
  if (deps.checkpoints && stream === undefined) stream = await deps.sink.head(streamRunId)
  if (!isStart(from)) await replaySilently(deps, translation, streamRunId, from, stream)
  yield { event: { type: 'start', messageId: streamRunId } }
  const { items, live } = segmentItems(deps.sink, streamRunId, from, {
    signal,
    until: read.until,
    primed,
  })
  const served = (
    serving: UiMessageTranslator,
    start: Cursor,
    reading: typeof items,
    handOff?: (at: Cursor) => boolean | Promise<boolean>,
    span?: ReadSpan | null
  ) =>
    serveLoop<UiChunk>({
      items: reading,
      // Read stored then live: a text item may be a piece of a row that grew (`live`).
      trail: servedTrail(deps, uiMessageTranslation(serving), streamRunId, start, stream, live),
      step: (item, at) =>
        item.t === 'end'
          ? turnEnd(deps, serving, streamRunId, at, read.settle)
          : { events: serving.push(item as StreamFrame, at), ends: false },
      ids: idOnLast,
      read: { streamRunId, cursor: formatCursor(start), live },
      span,
      handOff,
    })
  // A Durable Streams read (up to `until`, or settled at each end) is its own; a live turn is
  // served from the door's shared fan-out once it caught up (`src/door/live_hub.ts`).
  if (!live || read.settle) {
    yield* served(translator, from, items)
    return
  }
  let current = translator
  const source: LiveSource<UiChunk> = async (at, reading, handOff, seed, span) => {
    const own = new UiMessageTranslator(deps.options)
    if (seed === undefined) {
      await replaySilently(deps, uiMessageTranslation(own), streamRunId, at, stream)
      current = own
    } else own.restore(seed as string)
    const followed = segmentItems(deps.sink, streamRunId, at, { signal: reading })
    return served(own, at, followed.items, handOff, span)
  }
  yield* servedLive(
    deps,
    streamRunId,
    source,
    (handOff, span) => served(translator, from, items, handOff, span),
    () => current.checkpoint(),
    (at) => deps.sink.caughtUp(streamRunId, at),
    signal,
    { streamRunId, cursor: formatCursor(from), live }
  )
}

/**
 * What a resume from `after` (the client's cursor, unchecked yet) reads besides its checks, started
 * before them: the stored checkpoint its silent replay will want (`prefetchSilently`) and its
 * follow's first reads (`sink.prime`, returned: the caller releases it unless it serves from
 * `after`). Nothing for a cursor that does not parse (the check refuses it), the turn's start,
 * or a stream with no row.
 */
export function resumeReads(
  deps: UiDoorDeps,
  streamRunId: string,
  after: string | undefined,
  stream: StreamState | null,
  signal?: AbortSignal
): PrimedFollow | undefined {
  if (after === undefined || !stream) return undefined
  let cursor: Cursor
  try {
    cursor = parseCursor(after)
  } catch {
    return undefined
  }
  if (isStart(cursor)) return undefined
  const translation = uiMessageTranslation(new UiMessageTranslator(deps.options))
  prefetchSilently(deps, translation, streamRunId, cursor, stream)
  return deps.sink.prime(streamRunId, cursor, signal)
}

/** How a Durable Streams read takes a turn (see {@link turnChunks}). */
export interface TurnRead {
  until?: Cursor
  settle?: (end: number) => Promise<boolean | 'finish'>
}

/** A segment end of the turn: closes what is open, and finishes the turn unless it goes on. */
async function turnEnd(
  deps: UiDoorDeps,
  translator: UiMessageTranslator,
  streamRunId: string,
  at: Cursor,
  settle?: TurnRead['settle']
): Promise<ServedStep<UiChunk>> {
  const settled = settle ? await settle(at.seq) : true
  if (settled === false) return { events: [], ends: true }
  const goesOn =
    settled !== 'finish' && !translator.failed && (await streamGoesOn(deps, streamRunId, at.seq))
  return { events: translator.end(!goesOn), ends: !goesOn }
}

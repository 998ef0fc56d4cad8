import { parseCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import type { FrameTranslator } from '../translate/index.js'
import { rowFingerprint, TranslatorCheckpoints } from './checkpoints.js'
import type { StreamState } from './facts.js'
import type { DoorDeps } from './reply.js'

/**
 * Feed a stream's stored frames up to `until` (inclusive; inside a text row when it has an
 * offset) to the translator, emitting nothing: what re-attach and the transcript rebuild from.
 * Reads through the sink's one replay path; every segment end (appended ones too) closes what
 * the segment had open; a component replaced since changes the model as it did live.
 *
 * `translator` is a fresh one. With the replica's checkpoints (`deps.checkpoints`), it starts
 * from the nearest checkpoint at or before `until` and reads only what follows, leaving new
 * checkpoints on the way: a re-attach costs the rows after a checkpoint, not the whole stream.
 * The read starts at the checkpoint's own row: a checkpoint whose row is not the stored one any
 * more is discarded (with its stream's others) and the stream is replayed from its start.
 * `stream` (the stream's row as just read) keys checkpoints by the stream's incarnation.
 */
export async function replayInto(
  deps: Pick<DoorDeps, 'sink' | 'checkpoints'>,
  translator: FrameTranslator,
  streamRunId: string,
  until: Cursor,
  stream?: StreamState | null
): Promise<void> {
  const checkpoints = deps.checkpoints
  const key = checkpoints ? TranslatorCheckpoints.keyOf(translator, stream?.createdAt) : ''
  // The last whole row `until` covers (a cursor inside a text row covers the rows before it).
  const found = checkpoints?.nearest(key, until.offset === undefined ? until.seq : until.seq - 1)
  const items = deps.sink.replay(streamRunId, {
    after: found ? { seq: found.seq - 1 } : undefined,
    until,
    appendedEnds: true,
    superseded: true,
  })
  const trail = checkpoints ? new CheckpointTrail(checkpoints, key, translator) : null
  let pending = found
  for await (const item of items) {
    const at = parseCursor(item.cursor)
    if (pending) {
      // The checkpoint's own row, as stored now: served from only when it is the same row.
      if (at.seq !== pending.seq || rowFingerprint(item) !== pending.row) break
      translator.restore(pending.state)
      pending = null
      trail?.after(item, at)
      continue
    }
    trail?.before(at)
    if (item.t === 'end') translator.endSegment()
    else translator.push(item as StreamFrame, at, 'superseded' in item)
    trail?.after(item, at)
  }
  if (!pending) return
  // Not the stored row (or none): never served from. Nothing was pushed yet: start over.
  checkpoints!.discard(key)
  return replayInto(deps, translator, streamRunId, until, stream)
}

/**
 * Leaves checkpoints behind a translator as a stream's items go through it, in order: call
 * {@link before} before an item is translated and {@link after} once it was. A row is final
 * (a checkpoint may follow it) once a later row comes. `from`: where the items start; an item
 * inside the row `from` falls in (the rest of a text row) is not a whole row: no checkpoint
 * follows it. `live`: the items come from a live reader, whose text items may be pieces of a
 * row that grew (no checkpoint follows those either).
 */
export class CheckpointTrail {
  #previous: { seq: number; item: { t: string } } | null = null

  constructor(
    readonly checkpoints: TranslatorCheckpoints,
    readonly key: string,
    readonly translator: FrameTranslator,
    readonly from?: Cursor,
    readonly live = false
  ) {}

  /** The translator has taken every item before the one at `at`. */
  before(at: Cursor) {
    const previous = this.#previous
    if (!previous || at.seq <= previous.seq) return
    if (!this.checkpoints.due(this.key, previous.seq)) return
    this.checkpoints.save(this.key, previous.seq, rowFingerprint(previous.item), this.translator)
  }

  /** The translator took `item` (at `at`). */
  after(item: { t: string }, at: Cursor) {
    const partial =
      (this.live && item.t === 'text') ||
      (this.from?.offset !== undefined && at.seq === this.from.seq)
    this.#previous = partial ? null : { seq: at.seq, item }
  }
}

/** A trail for a translator serving items from `from`; `null` without checkpoints. */
export function checkpointTrail(
  deps: Pick<DoorDeps, 'checkpoints'>,
  translator: FrameTranslator,
  from: Cursor,
  stream: StreamState | null | undefined,
  live: boolean
) {
  if (!deps.checkpoints) return null
  const key = TranslatorCheckpoints.keyOf(translator, stream?.createdAt)
  return new CheckpointTrail(deps.checkpoints, key, translator, from, live)
}

/** The whole stream, replayed silently (as far as it is stored). */
export const WHOLE: Cursor = { seq: Number.MAX_SAFE_INTEGER }

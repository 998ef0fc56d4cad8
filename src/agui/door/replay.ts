import { parseCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import type { FrameTranslator } from '../translate/index.js'
import { TranslatorCheckpoints } from './checkpoints.js'
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
 */
export async function replayInto(
  deps: Pick<DoorDeps, 'sink' | 'checkpoints'>,
  translator: FrameTranslator,
  streamRunId: string,
  until: Cursor
) {
  const checkpoints = deps.checkpoints
  const key = checkpoints ? TranslatorCheckpoints.keyOf(translator) : ''
  // The last whole row `until` covers (a cursor inside a text row covers the rows before it).
  const found = checkpoints?.nearest(key, until.offset === undefined ? until.seq : until.seq - 1)
  if (found) translator.restore(found.state)
  const items = deps.sink.replay(streamRunId, {
    after: found ? { seq: found.seq } : undefined,
    until,
    appendedEnds: true,
    superseded: true,
  })
  for await (const item of items) {
    const at = parseCursor(item.cursor)
    // Every row before this one is final (a later row exists): a checkpoint may go there.
    if (checkpoints && at.seq > 1 && checkpoints.due(key, at.seq - 1)) {
      checkpoints.save(key, at.seq - 1, translator)
    }
    if (item.t === 'end') translator.endSegment()
    else translator.push(item as StreamFrame, at, 'superseded' in item)
  }
}

/** The whole stream, replayed silently (as far as it is stored). */
export const WHOLE: Cursor = { seq: Number.MAX_SAFE_INTEGER }

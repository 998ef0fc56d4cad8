import { parseCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import type { FrameTranslator } from '../translate/index.js'
import type { DoorDeps } from './reply.js'

/**
 * Feed a stream's stored frames up to `until` (inclusive; inside a text row when it has an
 * offset) to the translator, emitting nothing: what re-attach and the transcript rebuild from.
 * Reads through the sink's one replay path; every segment end (appended ones too) closes what
 * the segment had open; a component replaced since changes the model as it did live.
 */
export async function replayInto(
  deps: Pick<DoorDeps, 'sink'>,
  translator: FrameTranslator,
  streamRunId: string,
  until: Cursor
) {
  const items = deps.sink.replay(streamRunId, { until, appendedEnds: true, superseded: true })
  for await (const item of items) {
    if (item.t === 'end') translator.endSegment()
    else translator.push(item as StreamFrame, parseCursor(item.cursor), 'superseded' in item)
  }
}

/** The whole stream, replayed silently (as far as it is stored). */
export const WHOLE: Cursor = { seq: Number.MAX_SAFE_INTEGER }

import { formatCursor, parseCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import { streamGoesOn } from '../../runner/door_runs.js'
import { UiMessageTranslator, type UiChunk } from '../translate/index.js'
import type { UiChunkItem, UiDoorDeps } from './reply.js'

/**
 * A turn (one assistant message: a run's whole stream, every segment of it) as UI message
 * chunks, from `from` on: `start` with the message id (the stream's run id), then each frame's
 * chunks, read through the sink's one read path (stored, then live). The stream before `from` is
 * replayed silently into the translator first, so part ids and open parts are what they were.
 *
 * At a segment end the turn goes on when the stream does (decided and resuming, or reopened:
 * `streamGoesOn`), else it ends with `finish` (parked on an item nobody answered yet, finished,
 * failed). The frame's cursor is the SSE `id:` of its last chunk.
 */
export async function* turnChunks(
  deps: UiDoorDeps,
  streamRunId: string,
  from: Cursor,
  signal?: AbortSignal
): AsyncGenerator<UiChunkItem> {
  const translator = new UiMessageTranslator(deps.options)
  if (from.seq > 0 || from.offset !== undefined) {
    for await (const item of deps.sink.replay(streamRunId, { until: from })) {
      if (item.t === 'end') translator.end(false)
      else translator.push(item as StreamFrame, parseCursor(item.cursor))
    }
  }
  yield { chunk: { type: 'start', messageId: streamRunId } }
  const items = deps.sink.segments(streamRunId, { after: formatCursor(from), signal })
  for await (const item of items) {
    const at = parseCursor(item.cursor)
    if (item.t === 'end') {
      const goesOn = !translator.failed && (await streamGoesOn(deps, streamRunId, at.seq))
      yield* framed(translator.end(!goesOn), item.cursor)
      if (!goesOn) return
      continue
    }
    yield* framed(translator.push(item as StreamFrame, at), item.cursor)
  }
}

function framed(chunks: UiChunk[], cursor: string): UiChunkItem[] {
  return chunks.map((chunk, i) => (i === chunks.length - 1 ? { chunk, id: cursor } : { chunk }))
}

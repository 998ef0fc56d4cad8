import { formatCursor, parseCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import { checkpointKey, CheckpointTrail, replayFromCheckpoint } from '../../checkpoints/index.js'
import { streamGoesOn } from '../../runner/door_runs.js'
import type { StreamState } from '../../store/rows.js'
import { UiMessageTranslator, type UiChunk } from '../translate/index.js'
import type { UiChunkItem, UiDoorDeps } from './reply.js'

/**
 * A turn (one assistant message: a run's whole stream, every segment of it) as UI message
 * chunks, from `from` on: `start` with the message id (the stream's run id), then each frame's
 * chunks, read through the sink's one read path (stored, then live; a component a later one
 * replaced is sent as live readers got it, the later one replacing it in place by its id).
 *
 * The stream before `from` is replayed silently into the translator first, so part ids and open
 * parts are what they were: from the nearest of this replica's checkpoints at or before `from`
 * (`deps.checkpoints`, the rules both doors share: `src/checkpoints`), so a resume costs the
 * rows after a checkpoint, not the whole turn; what is served leaves checkpoints too. `stream`:
 * the stream's row as the caller just read it (its incarnation keys the checkpoints; else it is
 * read here).
 *
 * At a segment end the turn goes on when the stream does (decided and resuming, or reopened:
 * `streamGoesOn`), else it ends with `finish` (parked on an item nobody answered yet, finished,
 * failed). The frame's cursor is the SSE `id:` of its last chunk.
 */
export async function* turnChunks(
  deps: UiDoorDeps,
  streamRunId: string,
  from: Cursor,
  signal?: AbortSignal,
  stream?: StreamState | null
): AsyncGenerator<UiChunkItem> {
  const translator = new UiMessageTranslator(deps.options)
  const checkpoints = deps.checkpoints
  let key = ''
  if (checkpoints) {
    if (stream === undefined) stream = await deps.sink.head(streamRunId)
    key = checkpointKey(streamRunId, stream?.createdAt, translator.rules)
  }
  if (from.seq > 0 || from.offset !== undefined) {
    await replayFromCheckpoint(
      {
        sink: deps.sink,
        checkpoints,
        key,
        translator,
        // Replaced components too, translated as live: a checkpoint's state is then the same
        // whether a component before it was replaced before or after it was taken.
        read: { superseded: true },
        take: (item, at) => {
          if (item.t === 'end') translator.end(false)
          else translator.push(item as StreamFrame, at)
        },
      },
      streamRunId,
      from
    )
  }
  yield { event: { type: 'start', messageId: streamRunId } }
  const items = deps.sink.segments(streamRunId, {
    after: formatCursor(from),
    signal,
    superseded: true,
  })
  // Read stored then live: a text item may be a piece of a row that grew (`live`).
  const trail = checkpoints ? new CheckpointTrail(checkpoints, key, translator, from, true) : null
  for await (const item of items) {
    const at = parseCursor(item.cursor)
    trail?.before(at)
    if (item.t === 'end') {
      const goesOn = !translator.failed && (await streamGoesOn(deps, streamRunId, at.seq))
      const chunks = translator.end(!goesOn)
      trail?.after(item, at)
      yield* framed(chunks, item.cursor)
      if (!goesOn) return
      continue
    }
    const chunks = translator.push(item as StreamFrame, at)
    trail?.after(item, at)
    yield* framed(chunks, item.cursor)
  }
}

function framed(chunks: UiChunk[], cursor: string): UiChunkItem[] {
  return chunks.map((event, i) => (i === chunks.length - 1 ? { event, id: cursor } : { event }))
}

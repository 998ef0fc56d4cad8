import type { Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import { CheckpointTrail, replayFromCheckpoint } from '../../checkpoints/index.js'
import type { FrameTranslator, TranslatorCheckpoint } from '../translate/index.js'
import { TranslatorCheckpoints } from './checkpoints.js'
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
 * checkpoints on the way (`replayFromCheckpoint`, shared with the useChat door: a checkpoint
 * whose row is not the stored one any more is discarded, never served). `stream` (the stream's
 * row as just read) keys checkpoints by the stream's incarnation.
 */
export async function replayInto(
  deps: Pick<DoorDeps, 'sink' | 'checkpoints'>,
  translator: FrameTranslator,
  streamRunId: string,
  until: Cursor,
  stream?: StreamState | null
): Promise<void> {
  const checkpoints = deps.checkpoints
  await replayFromCheckpoint(
    {
      sink: deps.sink,
      checkpoints,
      key: checkpoints ? TranslatorCheckpoints.keyOf(translator, stream?.createdAt) : '',
      translator,
      read: { appendedEnds: true, superseded: true },
      take: (item, at) => {
        if (item.t === 'end') translator.endSegment()
        else translator.push(item as StreamFrame, at, 'superseded' in item)
      },
    },
    streamRunId,
    until
  )
}

/** A trail for a translator serving items from `from`; `null` without checkpoints. */
export function checkpointTrail(
  deps: Pick<DoorDeps, 'checkpoints'>,
  translator: FrameTranslator,
  from: Cursor,
  stream: StreamState | null | undefined,
  live: boolean
): CheckpointTrail<TranslatorCheckpoint> | null {
  if (!deps.checkpoints) return null
  const key = TranslatorCheckpoints.keyOf(translator, stream?.createdAt)
  return new CheckpointTrail(deps.checkpoints, key, translator, from, live)
}

/** The whole stream, replayed silently (as far as it is stored). */
export const WHOLE: Cursor = { seq: Number.MAX_SAFE_INTEGER }

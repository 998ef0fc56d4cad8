import type { Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import { replaySilently, type Translation, type TranslationDeps } from '../../door/index.js'
import type { FrameTranslator, TranslatorCheckpoint } from '../translate/index.js'
import type { StreamState } from './segment_cache.js'

/**
 * What shapes an AG-UI translator's state (its checkpoints' key, with its stream): its options
 * but the stream.
 */
export function aguiShape(translator: FrameTranslator): object {
  const shape: Partial<FrameTranslator['options']> = { ...translator.options }
  delete shape.streamRunId
  return shape
}

/**
 * The AG-UI translator as the kernel drives it (`src/door/translation.ts`): every segment end
 * (appended ones too) closes what the segment had open; a component replaced since changes the
 * model as it did live.
 */
export function aguiTranslation(translator: FrameTranslator): Translation<TranslatorCheckpoint> {
  return {
    translator,
    shape: aguiShape(translator),
    read: { appendedEnds: true, superseded: true },
    take: (item, at) => {
      if (item.t === 'end') translator.endSegment()
      else translator.push(item as StreamFrame, at, 'superseded' in item)
    },
  }
}

/**
 * Feed a stream's stored frames up to `until` to a fresh translator, emitting nothing: what
 * re-attach and the transcript rebuild from (`replaySilently`: from the nearest checkpoint, when
 * the door keeps them). `stream` (the stream's row as just read) keys checkpoints by the
 * stream's incarnation.
 */
export function replayInto(
  deps: TranslationDeps<TranslatorCheckpoint>,
  translator: FrameTranslator,
  streamRunId: string,
  until: Cursor,
  stream?: StreamState | null
): Promise<void> {
  return replaySilently(deps, aguiTranslation(translator), streamRunId, until, stream)
}

/** The whole stream, replayed silently (as far as it is stored). */
export const WHOLE: Cursor = { seq: Number.MAX_SAFE_INTEGER }

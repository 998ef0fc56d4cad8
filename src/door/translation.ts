import type { Cursor } from '../core/cursor.js'
import {
  checkpointKey,
  CheckpointTrail,
  prefetchCheckpoint,
  replayFromCheckpoint,
  type Checkpointable,
  type ReplayItem,
  type TranslatorCheckpoints,
} from '../checkpoints/index.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'

/**
 * A door's translator as the kernel drives it: the translator (its state kept and restored by
 * checkpoints), the options that shape that state (part of its checkpoints' key), how it takes
 * an item silently (rebuilding state, emitting nothing) and what its replays read besides
 * frames.
 */
export interface Translation<S> {
  translator: Checkpointable<S>
  shape: object
  take(item: ReplayItem, at: Cursor): void
  read: { appendedEnds?: boolean; superseded?: boolean }
}

/**
 * The one key of a translator's checkpoints: its stream, the stream's incarnation (its row's
 * `createdAt`, when known: a stream purged and opened again is another stream) and the options
 * that shape its state.
 */
export function translationKey(
  streamRunId: string,
  stream: { createdAt: number } | null | undefined,
  shape: object
) {
  return checkpointKey(streamRunId, stream?.createdAt, shape)
}

/** What a silent replay or a trail needs: the sink, and the door's checkpoints if it keeps any. */
export interface TranslationDeps<S> {
  sink: Pick<LucidTokenStreamSink, 'replay'>
  checkpoints?: TranslatorCheckpoints<S>
}

/**
 * Feed a stream's stored items up to `until` (inclusive; inside a text row when it has an
 * offset) to a fresh translator, silently: what a re-attach and a transcript rebuild from. With
 * the door's checkpoints it starts from the nearest at or before `until` and leaves new ones on
 * the way (`replayFromCheckpoint`); `stream` (the stream's row as just read) keys them by the
 * stream's incarnation.
 */
export async function replaySilently<S>(
  deps: TranslationDeps<S>,
  translation: Translation<S>,
  streamRunId: string,
  until: Cursor,
  stream?: { createdAt: number } | null
): Promise<void> {
  const checkpoints = deps.checkpoints
  await replayFromCheckpoint(
    {
      sink: deps.sink,
      checkpoints,
      key: checkpoints ? translationKey(streamRunId, stream, translation.shape) : '',
      translator: translation.translator,
      read: translation.read,
      take: translation.take,
    },
    streamRunId,
    until
  )
}

/**
 * Start reading the stored checkpoint a {@link replaySilently} to `until` would read (when it
 * would: none near in memory), and the rows after where it usually is, so a re-attach reads
 * them while it reads the rest it needs (`prefetchCheckpoint`).
 */
export function prefetchSilently<S>(
  deps: TranslationDeps<S>,
  translation: Pick<Translation<S>, 'shape' | 'read'>,
  streamRunId: string,
  until: Cursor,
  stream: { createdAt: number } | null | undefined
) {
  if (!deps.checkpoints) return
  const key = translationKey(streamRunId, stream, translation.shape)
  prefetchCheckpoint(
    { sink: deps.sink, checkpoints: deps.checkpoints, key, read: translation.read },
    streamRunId,
    until
  )
}

/**
 * The trail a served stream leaves checkpoints on, for a translator serving items from `from`
 * (`live`: items of a live reader, see `CheckpointTrail`); `null` without checkpoints.
 */
export function servedTrail<S>(
  deps: Pick<TranslationDeps<S>, 'checkpoints'>,
  translation: Translation<S>,
  streamRunId: string,
  from: Cursor,
  stream: { createdAt: number } | null | undefined,
  live: boolean
): CheckpointTrail<S> | null {
  if (!deps.checkpoints) return null
  const key = translationKey(streamRunId, stream, translation.shape)
  return new CheckpointTrail(deps.checkpoints, key, translation.translator, from, live)
}

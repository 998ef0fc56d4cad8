import {
  checkpointKey,
  StoredCheckpoints,
  TranslatorCheckpoints as Checkpoints,
  type StateCodec,
} from '../../checkpoints/index.js'
import { sinkInternals, type LucidTokenStreamSink } from '../../sink/lucid_sink.js'
import { CheckpointRows } from '../../store/checkpoint_rows.js'
import type { FrameTranslator, TranslatorCheckpoint } from '../translate/index.js'

/**
 * The AG-UI door's translator checkpoints: the shared store (`src/checkpoints`, the rules both
 * doors keep) of {@link FrameTranslator} states, keyed by {@link keyOf}; stored in the
 * database too (every `storedEvery` rows; 0: never) with {@link STATE_CODEC}.
 */
export class TranslatorCheckpoints extends Checkpoints<TranslatorCheckpoint> {
  /**
   * The cache key of a translator: its stream, the stream's incarnation (its row's `createdAt`,
   * when known) and the options that shape its state.
   */
  static keyOf(translator: FrameTranslator, incarnation?: number) {
    const { streamRunId, ...rest } = translator.options
    return checkpointKey(streamRunId, incarnation, rest)
  }

  /** The door's checkpoints, stored on `sink`'s database too unless `storedEvery` is 0. */
  static of(sink: LucidTokenStreamSink, every?: number, storedEvery?: number) {
    const checkpoints = new TranslatorCheckpoints(every)
    if (storedEvery !== 0) {
      checkpoints.stored = new StoredCheckpoints(
        new CheckpointRows(() => sinkInternals(sink).client, sink.tables),
        STATE_CODEC,
        'agui',
        { every: storedEvery, onError: sink.onError }
      )
    }
    return checkpoints
  }
}

/**
 * A {@link TranslatorCheckpoint} as JSON and back: its model's open calls (a Map) and sent
 * activities (a Set) as arrays; the rest is plain data already.
 */
export const STATE_CODEC: StateCodec<TranslatorCheckpoint> = {
  encode: (state) =>
    JSON.stringify({
      ...state,
      model: {
        ...state.model,
        calls: [...state.model.calls],
        activities: [...state.model.activities],
      },
    }),
  decode: (text) => {
    const state = JSON.parse(text)
    state.model.calls = new Map(state.model.calls)
    state.model.activities = new Set(state.model.activities)
    return state as TranslatorCheckpoint
  },
}

import { checkpointKey, TranslatorCheckpoints as Checkpoints } from '../../checkpoints/index.js'
import type { FrameTranslator, TranslatorCheckpoint } from '../translate/index.js'

/**
 * The AG-UI door's translator checkpoints: the shared store (`src/checkpoints`, the rules both
 * doors keep) of {@link FrameTranslator} states, keyed by {@link keyOf}.
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
}

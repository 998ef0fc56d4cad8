import { StoredCheckpoints, TranslatorCheckpoints, type StateCodec } from '../checkpoints/index.js'
import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { CheckpointRows } from '../store/checkpoint_rows.js'

/** How a door's translator state is stored: the door's name (part of the stored key) and codec. */
export interface DoorState<S> {
  door: string
  codec: StateCodec<S>
}

/** The checkpoint settings every door takes (in its options). */
export interface CheckpointSettings {
  /**
   * Keep the translator's state every this many rows of a stream this replica translates, so a
   * re-attach translates only what follows the nearest checkpoint. Default
   * `DEFAULTS.checkpointEvery` (64).
   */
  checkpointEvery?: number
  /**
   * Also store a checkpoint in the database (the `checkpoints` table) each time the kept ones
   * cross a multiple of this many rows, so a replica that never served a stream re-attaches
   * near too. 0: never. Default `DEFAULTS.storedCheckpointEvery` (128).
   */
  storedCheckpointEvery?: number
}

/**
 * A door's translator checkpoints: in memory (every `checkpointEvery` rows), and stored on
 * `sink`'s database with the door's codec under the door's name, unless
 * `storedCheckpointEvery` is 0.
 */
export function doorCheckpoints<S>(
  sink: LucidTokenStreamSink,
  state: DoorState<S>,
  settings: CheckpointSettings = {}
): TranslatorCheckpoints<S> {
  const checkpoints = new TranslatorCheckpoints<S>(settings.checkpointEvery)
  checkpoints.onError = sink.onError
  if (settings.storedCheckpointEvery !== 0) {
    checkpoints.stored = new StoredCheckpoints(
      new CheckpointRows(() => sinkInternals(sink).client, sink.tables),
      state.codec,
      state.door,
      { every: settings.storedCheckpointEvery, onError: sink.onError }
    )
  }
  return checkpoints
}

/**
 * Translator checkpoints, shared by both doors (per replica, in memory, and stored in the
 * database every `DEFAULTS.storedCheckpointEvery` rows: stored.ts): the store and its key
 * (store.ts), the trail a served or replayed stream leaves them on (trail.ts), and the replay
 * that starts from the nearest one (from_checkpoint.ts). Translator-agnostic: a door gives a
 * {@link Checkpointable} translator and how it takes an item.
 */
export {
  checkpointKey,
  rowFingerprint,
  TranslatorCheckpoints,
  type Checkpointable,
  type FoundCheckpoint,
} from './store.js'
export { CheckpointTrail } from './trail.js'
export {
  CHECKPOINT_FORMAT,
  parseCheckpointKey,
  QUEUED,
  StoredCheckpoints,
  type CheckpointRowStore,
  type StateCodec,
  type StoredCheckpointOptions,
  type StoredCheckpointRow,
} from './stored.js'
export {
  prefetchCheckpoint,
  replayFromCheckpoint,
  type CheckpointedReplay,
  type ReplayItem,
} from './from_checkpoint.js'

/**
 * Translator checkpoints, shared by both doors (per replica, in memory): the store and its key
 * (store.ts), the trail a served or replayed stream leaves them on (trail.ts), and the replay
 * that starts from the nearest one (replay.ts). Translator-agnostic: a door gives a
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
export { replayFromCheckpoint, type CheckpointedReplay, type ReplayItem } from './replay.js'

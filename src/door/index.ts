/**
 * The door kernel: what every protocol door stands on, whatever its protocol. Its deps and
 * construction (deps.ts), its translator checkpoints (checkpoints.ts) and their key, silent
 * replays and trails (translation.ts), the one serve loop (serve_loop.ts), a stream's open
 * items and the decisions a door applies (parked.ts), the input guard (guard.ts), the shared
 * refusals (refusals.ts), a re-attach's cursor checked (position_check.ts), the one verdict on
 * what follows a segment end (verdict.ts), the reply union every door answers (reply.ts), and
 * the busy-thread policy (multitask.ts);
 * the ownership rule is core's (`core/owner.ts`), handed on here.
 * A door adds a translator, a state codec and its protocol's rules.
 */
export { DoorBase, doorDeps, type DoorCore, type DoorDeps } from './deps.js'
export { doorCheckpoints, type CheckpointSettings, type DoorState } from './checkpoints.js'
export {
  prefetchSilently,
  replaySilently,
  servedTrail,
  translationKey,
  type Translation,
  type TranslationDeps,
} from './translation.js'
export {
  idOnLast,
  segmentItems,
  serveLoop,
  withoutIds,
  type ServeLoop,
  type ServedStep,
} from './serve_loop.js'
export { ownedBy, ownerOf } from '../core/owner.js'
export {
  applyDecisions,
  itemDecision,
  openItems,
  planBatch,
  type DoorDecision,
  type ParkedRef,
} from './parked.js'
export { guardInput, refusalOfError, type GuardRules } from './guard.js'
export { invalidCursor, notFound, refused } from './refusals.js'
export { checkedPosition, type PositionGrammar } from './position_check.js'
export {
  afterSegmentEnd,
  readAfterSegmentEnd,
  streamGoesOn,
  type SegmentEndVerdict,
  type StreamAfterEnd,
} from './verdict.js'
export type { DoorReply, Refused, SentEvent } from './reply.js'
export {
  admitMessage,
  busyWith,
  isMultitaskStrategy,
  MULTITASK_STRATEGIES,
  multitaskStrategyOf,
  queueFull,
  stopBusy,
  stopsFirst,
  threadBusy,
  judgeForTurn,
  turnLost,
  waitForStart,
  type MultitaskStrategy,
  type QueuedState,
} from './multitask.js'
export { LiveHub, servedLive, type LiveSource } from './live_hub.js'

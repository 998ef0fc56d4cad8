/**
 * The package's OpenTelemetry metrics (docs/observability.md#metrics): instruments made lazily
 * from the global meter provider, recorded through the functions here by every layer. Without
 * an SDK every call returns at once.
 */
export { METRIC, ATTRIBUTE, dbSystem } from './names.js'
export { instruments, type Instruments } from './instruments.js'
export {
  recordCommit,
  recordGroupCommit,
  watchOutageBuffer,
  type CommittedRows,
  type HeldBytes,
} from './write.js'
export {
  recordLiveReader,
  recordReattach,
  recordReplayRows,
  recordCommitted,
  recordWakeUpHeard,
  type DoorName,
} from './read.js'
export {
  recordParksSettled,
  recordParksCancelled,
  recordResumed,
  type SettledPark,
} from './parking.js'
export { recordRunStarted, recordSegmentEnded } from './runs.js'
export { recordWebhookAttempt, type WebhookAttemptResult } from './webhooks.js'

import { instruments } from './instruments.js'
import { ATTRIBUTE } from './names.js'

/** The doors a re-attach is counted by. */
export type DoorName = 'agui' | 'ui_message'

/** A reader started (`+1`) or stopped (`-1`) following a stream on this replica. */
export function recordLiveReader(delta: 1 | -1) {
  instruments()?.liveReaders.add(delta)
}

/** A door served a re-attach to a run's stream. */
export function recordReattach(door: DoorName) {
  instruments()?.reattaches.add(1, { [ATTRIBUTE.door]: door })
}

/** A reader read `rows` rows from the database (one store page). */
export function recordReplayRows(rows: number) {
  if (rows > 0) instruments()?.replayRows.add(rows)
}

/** Commits this replica made whose wake-up it has not heard back yet: key -> performance.now(). */
const pending = new Map<string, number>()
const MAX_PENDING = 512
/** Whether any wake-up was heard in this process (a poll-only replica notes no commit). */
let listening = false

const key = (runId: string, rev: number) => `${rev} ${runId}`

/**
 * A commit of this replica changed `runId` to `rev`: when its wake-up is heard back
 * ({@link recordWakeUpHeard}), the time between is the notifier's lag. Only while a notifier
 * delivers wake-ups and an SDK is installed; at most a few hundred commits are remembered.
 */
export function recordCommitted(runId: string, rev: number | undefined) {
  if (!listening || rev === undefined || !instruments()) return
  if (pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value!)
  pending.set(key(runId, rev), performance.now())
}

/** A notifier heard a wake-up for `runId` at `rev` (`via`: `pg`, `redis`). */
export function recordWakeUpHeard(via: 'pg' | 'redis', runId: string, rev: number | undefined) {
  listening = true
  if (rev === undefined || pending.size === 0) return
  const at = pending.get(key(runId, rev))
  if (at === undefined) return
  pending.delete(key(runId, rev))
  instruments()?.notifierLag.record((performance.now() - at) / 1000, {
    [ATTRIBUTE.notifier]: via,
  })
}

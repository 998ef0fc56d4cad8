import { formatCursor, type Cursor } from '../core/cursor.js'
import type { DeliveredFrame } from '../core/frames.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { positionOf, type SegmentEnd, type SupersededFrame } from '../sink/read_path.js'
import { rowFingerprint, type Checkpointable, type TranslatorCheckpoints } from './store.js'
import { CheckpointTrail } from './trail.js'
import type { StoredCheckpoints } from './stored.js'

/** An item of the sink's one replay path, as a door's translator takes it. */
export type ReplayItem = DeliveredFrame | SupersededFrame | SegmentEnd

/** A silent replay into a translator (see {@link replayFromCheckpoint}). */
export interface CheckpointedReplay<S> {
  sink: Pick<LucidTokenStreamSink, 'replay'>
  /** This replica's checkpoints of the door; none: the stream is replayed from its start. */
  checkpoints?: TranslatorCheckpoints<S>
  /** The translator's key ({@link checkpointKey} of the stream, incarnation and options). */
  key: string
  /** A fresh translator, which `take` feeds. */
  translator: Checkpointable<S>
  /** What the door's replay reads besides frames (the sink's `replay` options). */
  read?: { appendedEnds?: boolean; superseded?: boolean }
  /** Feed one item (a frame or a segment end, at `at`) to the translator, emitting nothing. */
  take: (item: ReplayItem, at: Cursor) => void
}

/** The last whole row `until` covers (a cursor inside a text row covers the rows before it). */
const lastWholeRow = (until: Cursor) => (until.offset === undefined ? until.seq : until.seq - 1)

/**
 * Whether a replay to row `last` reads the stored nearest: none in memory, or far back (this
 * replica did not serve the stream, or not lately); the stored one is used when it is nearer.
 */
function readsStored(
  stored: StoredCheckpoints<unknown>,
  found: { seq: number } | null,
  last: number
): boolean {
  return stored.on && (!found || last - found.seq >= stored.every)
}

/** Rows read ahead, held at most per door's checkpoints (one not asked for goes with the oldest). */
const AHEAD = 64
/**
 * How long rows read ahead are held, in milliseconds: the re-attach that read them takes them
 * at once; one that never did (refused, its client gone) leaves them to no later one: they are
 * let go then.
 */
const AHEAD_MS = 1_000

/**
 * The rows a {@link replayFromCheckpoint} to `until` reads after a stored checkpoint, read
 * ahead of it from where that checkpoint usually is (see {@link prefetchCheckpoint}): its first
 * page asked for at once, the rest read as the replay goes.
 */
interface RowsAhead {
  /** The row it reads from. */
  from: number
  items: AsyncIterator<ReplayItem>
  first: Promise<IteratorResult<ReplayItem>>
}

/** Each door's rows read ahead (by its checkpoints), by key and cursor. */
const READ_AHEAD = new WeakMap<object, Map<string, RowsAhead>>()

const aheadKey = (key: string, until: Cursor) => `${formatCursor(until)}\n${key}`

/** Let go of rows read ahead that no replay took (their read ends; a failure is nobody's). */
function drop(ahead: RowsAhead) {
  ahead.items.return?.(undefined)?.catch(() => {})
}

/**
 * Start reading the stored checkpoint a {@link replayFromCheckpoint} to `until` with these
 * checkpoints and key would read, if it would (a re-attach, while it reads what else it needs),
 * and the rows it would then read: from the last multiple of the stored spacing at or before
 * `until`, where a replay leaves the stored one it finds (the first checkpoint it keeps at or
 * past each multiple). Found there, the replay takes those rows: the checkpoint and the rows
 * after it in one round trip, not two; found before it (a cursor just past a multiple, before
 * the checkpoint kept there), they are dropped and the rows read after it as before.
 */
export function prefetchCheckpoint<S>(
  replay: Pick<CheckpointedReplay<S>, 'sink' | 'checkpoints' | 'key' | 'read'>,
  streamRunId: string,
  until: Cursor
) {
  const { checkpoints, key } = replay
  const stored = checkpoints?.stored
  if (!stored) return
  const last = lastWholeRow(until)
  // (`nearest` in memory moves the stream to the most recently used end: it is about to be.)
  const found = checkpoints.nearest(key, last)
  if (!readsStored(stored, found, last)) return
  stored.prefetch(key, last)
  const from = Math.floor(last / stored.every) * stored.every
  if (from <= (found?.seq ?? 0)) return
  let held = READ_AHEAD.get(checkpoints)
  if (!held) READ_AHEAD.set(checkpoints, (held = new Map()))
  const at = aheadKey(key, until)
  if (held.has(at)) return
  if (held.size >= AHEAD) {
    const [oldest, ahead] = held.entries().next().value!
    held.delete(oldest)
    drop(ahead)
  }
  const items = replay.sink
    .replay(streamRunId, { ...replay.read, after: { seq: from - 1 }, until })
    [Symbol.asyncIterator]()
  const first = items.next()
  first.catch(() => {})
  const ahead = { from, items, first }
  held.set(at, ahead)
  // Not taken in time: let go (its page is not held for a re-attach that never came).
  const replica = held
  setTimeout(() => {
    if (replica.get(at) !== ahead) return
    replica.delete(at)
    drop(ahead)
  }, AHEAD_MS).unref()
}

/** The rows read ahead for `key` and `until`, if held (taken: a second replay reads its own). */
function takeAhead(checkpoints: object | undefined, key: string, until: Cursor) {
  const held = checkpoints ? READ_AHEAD.get(checkpoints) : undefined
  const at = aheadKey(key, until)
  const ahead = held?.get(at)
  if (ahead) held!.delete(at)
  return ahead ?? null
}

/** Rows read ahead, from row `seq` on (those before it skipped). */
async function* aheadFrom(ahead: RowsAhead, seq: number): AsyncGenerator<ReplayItem> {
  try {
    for (let next = await ahead.first; !next.done; next = await ahead.items.next()) {
      if (positionOf(next.value).seq >= seq) yield next.value
    }
  } finally {
    drop(ahead)
  }
}

/**
 * Feed a stream's stored items up to `until` (inclusive; inside a text row when it has an
 * offset) to a fresh translator through `take`: what a door's re-attach rebuilds the
 * translator's state from, through the sink's one replay path.
 *
 * With checkpoints, it starts from the nearest one at or before `until` and reads only what
 * follows, leaving new checkpoints on the way: a re-attach costs the rows after a checkpoint,
 * not the whole stream. The read starts at the checkpoint's own row: a checkpoint whose row is
 * not the stored one any more is discarded (with its stream's others, never served) and the
 * stream is replayed from its start. Stored checkpoints (`checkpoints.stored`) are read when
 * this replica has none near: the nearer of the two is used, verified the same way (a stored
 * one that does not match is deleted with its stream's others), and kept in memory.
 */
export async function replayFromCheckpoint<S>(
  replay: CheckpointedReplay<S>,
  streamRunId: string,
  until: Cursor,
  useStored = true
): Promise<void> {
  const { checkpoints, key, translator, take } = replay
  const last = lastWholeRow(until)
  let found = checkpoints?.nearest(key, last) ?? null
  let fromStore = false
  const stored = useStored ? checkpoints?.stored : null
  const ahead = useStored ? takeAhead(checkpoints, key, until) : null
  if (stored && readsStored(stored, found, last)) {
    const far = await stored.nearest(key, last)
    if (far && (!found || far.seq > found.seq)) {
      found = far
      fromStore = true
    }
  }
  // The rows read ahead serve when they start at or before the checkpoint's row.
  const served = ahead && found && found.seq >= ahead.from ? aheadFrom(ahead, found.seq) : null
  if (ahead && !served) drop(ahead)
  const items =
    served ??
    replay.sink.replay(streamRunId, {
      ...replay.read,
      after: found ? { seq: found.seq - 1 } : undefined,
      until,
    })
  const trail = checkpoints ? new CheckpointTrail(checkpoints, key, translator) : null
  let pending = found
  for await (const item of items) {
    const at = positionOf(item)
    if (pending) {
      // The checkpoint's own row, as stored now: served from only when it is the same row.
      if (at.seq !== pending.seq || rowFingerprint(item) !== pending.row) break
      translator.restore(pending.state)
      if (fromStore) checkpoints!.keep(key, pending.seq, pending.row, pending.state)
      pending = null
      trail?.after(item, at)
      continue
    }
    trail?.before(at)
    take(item, at)
    trail?.after(item, at)
  }
  if (!pending) return
  // Not the stored row (or none): never served from, in memory or stored. Nothing was taken
  // yet: start over, from memory only (the stored ones' deletion runs in the background).
  checkpoints!.discard(key)
  checkpoints!.stored?.discard(key)
  return replayFromCheckpoint(replay, streamRunId, until, false)
}

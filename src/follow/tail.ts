import type { Cursor } from '../core/cursor.js'
import type { StreamFrame } from '../core/frames.js'
import type { CommitResult } from '../store/append_plan.js'
import type { StreamState } from '../store/rows.js'
import type { StreamReads } from '../store/stream_reads.js'
import { nowMs } from '../store/sql.js'
import { isRev } from '../store/wake_ups.js'
import { isTransientError } from '../store/transient.js'
import { ReadHealth } from './read_health.js'
import { Feed } from './feed.js'
import type { Notifier } from './notifiers/notifier.js'
import { NotifierLifecycle } from './notifier_lifecycle.js'
import { TailReads, type Woken } from './tail_reads.js'
import type { TailObserver, TailOptions } from './tail_options.js'

export type { TailObserver, TailOptions } from './tail_options.js'

/**
 * The ONE tail reader of a replica. It follows every stream that has a reader on this replica,
 * and reads the store once per change of a stream however many readers it has, so database reads
 * do not grow with readers (its reads: {@link TailReads}).
 *
 * Wake-ups: a local writer hands its committed rows over right after the commit (no read at
 * all); {@link Notifier}s wake it for commits on other replicas: PostgreSQL LISTEN/NOTIFY, and a
 * poll of the heads of all followed streams in one query (`resync`), the fallback and the safety
 * net, which also finds writers whose lease lapsed. No timer runs while nothing is followed
 * ({@link NotifierLifecycle}).
 */
export class Tail {
  #feeds = new Map<string, Feed>()
  #store: StreamReads
  #reads: TailReads
  #notifiers: NotifierLifecycle
  /** Streams woken with a newer rev since the last turn of the event loop, and that rev. */
  #due = new Map<string, number>()
  /** Streams woken without a rev, their heads to check together (see {@link #checkSoon}). */
  #unsure = new Set<string>()
  /** The check of {@link #unsure} streams in flight: one at a time. */
  #checking: Promise<void> | null = null
  #polling: Promise<void> | null = null
  #closed = false
  /** Local commits in flight per stream, and the highest rev notified meanwhile. */
  #inflight = new Map<string, { count: number; rev: number }>()
  /** Told of every stream this replica hears about (see {@link observe}). */
  #observers = new Set<TailObserver>()
  /** Holds that keep the notifiers running with nothing followed (see {@link hold}). */
  #holds = 0

  constructor(
    store: StreamReads,
    readonly notifiers: Notifier[],
    readonly options: TailOptions
  ) {
    this.#store = store
    this.#reads = new TailReads(
      store,
      this.#feeds,
      options,
      ReadHealth.forLease(options.lapseGraceMs ?? 0)
    )
    this.#notifiers = new NotifierLifecycle(notifiers, {
      wake: (runId, rev) => this.wake(runId, rev),
      // Time to poll, or a reconnected listener that may have missed notifications.
      resync: () => void this.poll().catch(() => {}),
    })
  }

  /** Whether this replica follows the stream already (its feed is there, or being read). */
  following(runId: string): boolean {
    return this.#feeds.has(runId)
  }

  /** Start following a stream (or join its feed). Pair every call with {@link unfollow}. */
  async follow(runId: string): Promise<Feed> {
    let feed = this.#feeds.get(runId)
    if (!feed) {
      feed = new Feed(runId, this.options.windowSize, this.options.windowBytes)
      this.#feeds.set(runId, feed)
      const created = feed
      created.ready = (async () => {
        // The stream's row and its last row in one statement (one snapshot: the rev read is the
        // one of the rows read). No row at its `last_seq` while it has one: read it after the
        // head (the rev can only be older than the rows read, which costs one extra read
        // later, never a missed row).
        const found = await this.#store.headWithLastRow(runId)
        if (!found) {
          created.missing = true
          created.gone = true
          return
        }
        const { head } = found
        created.rev = head.rev
        const last = found.last ?? (head.lastSeq > 0 ? await this.#store.lastRow(runId) : null)
        created.reset(last, head.status)
      })()
      if (!this.#closed) this.#notifiers.start()
    }
    feed.refs++
    try {
      await feed.ready
    } catch (error) {
      this.unfollow(runId)
      throw error
    }
    return feed
  }

  /** Stop following a stream (its feed goes once its last reader left). */
  unfollow(runId: string) {
    const feed = this.#feeds.get(runId)
    if (!feed) return
    if (--feed.refs <= 0) this.#feeds.delete(runId)
    this.#idleIfUnused()
  }

  /**
   * Keep the notifiers running though nothing is followed here (a watcher of streams this
   * replica writes, to hear other replicas' changes to them: a stop). Returns the release.
   */
  hold(): () => void {
    this.#holds++
    if (!this.#closed) this.#notifiers.start()
    let released = false
    return () => {
      if (released) return
      released = true
      this.#holds--
      this.#idleIfUnused()
    }
  }

  #idleIfUnused() {
    const unused = () => this.#feeds.size === 0 && this.#holds === 0
    if (unused()) this.#notifiers.idle(unused)
  }

  /** Whether a reader of `runId` at `cursor` is served from this replica's feed (see `Feed.holds`). */
  holds(runId: string, cursor: Cursor): boolean {
    return this.#feeds.get(runId)?.holds(cursor) ?? false
  }

  /** Deliveries held in memory for a followed stream (bounded by `windowSize`). */
  windowLength(runId: string) {
    return this.#feeds.get(runId)?.length ?? 0
  }

  /** UTF-8 bytes held in memory for a followed stream (bounded by `windowBytes`). */
  windowBytes(runId: string) {
    return this.#feeds.get(runId)?.bytes ?? 0
  }

  /** Whether a notifier (the poll's timer, LISTEN) or a lingering timer is active. */
  get running() {
    return this.#notifiers.running
  }

  /** How many streams this replica follows. */
  get followed() {
    return this.#feeds.size
  }

  /**
   * A local writer starts a commit. Notifications for the stream wait until it is handed over
   * (its own NOTIFY can arrive before its COMMIT's reply), so they do not cost a read.
   * Call the returned function with the result, or `null` when the commit failed.
   */
  commitStarted(runId: string): (result: CommitResult | null) => void {
    const entry = this.#inflight.get(runId) ?? { count: 0, rev: -1 }
    entry.count++
    this.#inflight.set(runId, entry)
    return (result) => {
      if (--entry.count === 0) this.#inflight.delete(runId)
      if (result) this.committed(runId, result)
      if (entry.count === 0 && entry.rev >= 0) this.wake(runId, entry.rev)
    }
  }

  /**
   * Be told the id of every stream that changed as this replica hears of it, followed here or
   * not: local commits at once, other replicas' through the notifiers while they run (a notifier
   * runs while some stream is followed here; pair this with a poll for the rest). For watchers
   * of many streams at once, such as the admin console's queue. The listener gets the stream's
   * revision when known, and whether the change is this replica's own commit (`local`). Returns
   * the function that stops.
   */
  observe(listener: TailObserver): () => void {
    this.#observers.add(listener)
    return () => {
      this.#observers.delete(listener)
    }
  }

  #observed(runId: string, rev?: number, local = false) {
    for (const listener of this.#observers) {
      try {
        listener(runId, rev, local)
      } catch {
        // An observer's failure is its own; the tail goes on.
      }
    }
  }

  /**
   * A local writer committed: hand the rows straight to the feed when they continue its head;
   * otherwise (another replica wrote in between) read the store.
   */
  committed(runId: string, result: CommitResult) {
    this.#observed(runId, result.rev, true)
    const feed = this.#feeds.get(runId)
    if (!feed || feed.missing) return
    if (!feed.initialized) return this.wake(runId)
    const head = feed.head
    // Applying is idempotent (rows at or before the head are ignored), so a read racing with
    // this hand-over cannot duplicate anything.
    const continues = result.grown
      ? head.seq === result.grown.seq && head.offset === result.grown.from
      : head.seq === result.before
    if (continues) {
      if (result.grown) feed.grow(result.grown.seq, result.grown.body)
      feed.apply(result.rows)
      if (feed.rev === result.rev - 1) feed.rev = result.rev
    } else {
      this.wake(runId)
    }
  }

  /**
   * A local writer stopped and its failure could not be stored: this replica's readers of the
   * stream end with `run_failed` after what is stored (other replicas' once its lease lapses).
   */
  lost(runId: string) {
    this.#feeds.get(runId)?.markLost()
  }

  /** A live-only partial component from a local writer. */
  partial(runId: string, frame: StreamFrame) {
    this.#feeds.get(runId)?.partial(frame)
  }

  /**
   * Something changed in a stream (a notification, a local open or close): read it if followed
   * here. With `rev`, a feed already at that revision skips the read; without, the stream's head
   * is read too, so a deleted stream is noticed at once.
   *
   * A wake-up is a hint, whoever sent it (anyone who can NOTIFY or publish on the channel): it
   * can cause a read, nothing else. A feed's revision is only ever what it read from the
   * database (or its own writer committed), so a `rev` far ahead costs one read and pins
   * nothing; a `rev` that is not a non-negative safe integer counts as absent. Wake-ups are
   * coalesced (per turn of the event loop, one read per stream at a time), so a flood of them
   * costs reads back to back, and a real one is still read right after the read in flight.
   */
  wake(runId: string, rev?: number) {
    if (!isRev(rev)) rev = undefined
    this.#observed(runId, rev)
    const feed = this.#feeds.get(runId)
    if (!feed) return
    const inflight = this.#inflight.get(runId)
    if (inflight && rev !== undefined) {
      inflight.rev = Math.max(inflight.rev, rev)
      return
    }
    if (rev === undefined) {
      this.#checkSoon(runId)
    } else if (rev > feed.rev) {
      // The commit that bumped the stream to `rev` was visible before its notification, so
      // once this read is done the feed has it. Wake-ups heard in one turn of the event loop
      // (a group commit elsewhere notifies every stream it carried at once) share one read.
      if (this.#due.size === 0) setImmediate(() => this.#readDue())
      this.#due.set(runId, Math.max(this.#due.get(runId) ?? -1, rev))
    }
  }

  /**
   * Read the streams woken since the last turn of the event loop (see `TailReads.readMany`); the
   * revs they were woken with only chose them (each feed's rev comes from the read).
   */
  #readDue() {
    const due = this.#due
    this.#due = new Map()
    const woken: Woken[] = []
    for (const [runId, rev] of due) {
      const feed = this.#feeds.get(runId)
      if (feed && !feed.missing && rev > feed.rev) woken.push({ runId, feed })
    }
    void this.#reads.readMany(woken).catch(() => {})
  }

  /**
   * Check a stream's head (and read its rows if it changed) soon: those woken without a rev in
   * one turn of the event loop in one check, one check at a time (the streams woken meanwhile
   * are checked right after it).
   */
  #checkSoon(runId: string) {
    const first = this.#unsure.size === 0
    this.#unsure.add(runId)
    if (first && !this.#checking) setImmediate(() => this.#checkUnsure())
  }

  #checkUnsure() {
    const runIds = [...this.#unsure]
    this.#unsure.clear()
    if (runIds.length === 0) return
    this.#checking = this.#check(runIds)
      .catch(() => {})
      .finally(() => {
        this.#checking = null
        if (this.#unsure.size > 0) this.#checkUnsure()
      })
  }

  /** Poll the heads of every followed stream in one query; read those that changed. */
  async poll(): Promise<void> {
    if (this.#polling) return this.#polling
    this.#polling = this.#check([...this.#feeds.keys()]).finally(() => {
      this.#polling = null
    })
    return this.#polling
  }

  /** Read the heads of some followed streams; read the rows of those that changed. */
  async #check(which: string | string[]): Promise<void> {
    const heads = await this.#readChanged(Array.isArray(which) ? which : [which])
    if (!heads) return
    if (!this.#reads.health.healthyFor(this.options.lapseGraceMs ?? 0)) return
    await this.options.clock?.()
    for (const runId of lapsed(heads)) {
      await this.options.onLapsed(runId).catch((error) => {
        // Its failure cannot be stored (the database refuses it): its readers here are told
        // from memory; a transient failure is tried again at the next poll.
        if (!isTransientError(error)) this.#feeds.get(runId)?.markLost()
      })
    }
  }

  /** The heads of those of `runIds` followed here, and the rows of the streams that changed. */
  async #readChanged(which: string[]): Promise<Map<string, StreamState> | null> {
    const runIds = which.filter((id) => this.#feeds.has(id) && !this.#feeds.get(id)!.missing)
    if (runIds.length === 0) return null
    const heads = await this.#reads.heads(runIds)
    const changed: Woken[] = []
    for (const runId of runIds) {
      const feed = this.#feeds.get(runId)
      if (!feed) continue
      const head = heads.get(runId)
      if (!head) {
        feed.markGone()
        continue
      }
      // A head older than what a hand-over already applied says nothing new about the status.
      if (head.rev >= feed.rev) feed.setStatus(head.status)
      // The rev is recorded only once the read succeeded: a failed read is retried next poll.
      if (head.rev !== feed.rev) changed.push({ runId, feed, rev: head.rev })
    }
    await this.#reads.readMany(changed)
    return heads
  }

  /**
   * Stop timers and the notifiers. First every followed stream is read once more (for at most
   * `catchUpMs`), so a reader here gets what was committed before the shutdown (the drain's own
   * `replica_shutdown` frames among it) however late its wake-up; then readers end quietly (no
   * error frame): the run may well go on elsewhere, and they resume from their cursor on
   * another replica.
   */
  async close(catchUpMs = CLOSE_CATCH_UP_MS) {
    if (!this.#closed) {
      this.#closed = true
      await this.#catchUp(catchUpMs)
    }
    for (const feed of this.#feeds.values()) feed.markClosed()
    this.#feeds.clear()
    await this.#notifiers.stop()
  }

  /** One last read of every followed stream (no lapse settled), bounded by `ms`. */
  async #catchUp(ms: number) {
    const reading = (async () => {
      await Promise.allSettled([this.#checking, this.#polling])
      await Promise.allSettled([...this.#feeds.values()].map((feed) => feed.ready))
      await this.#readChanged([...this.#feeds.keys()])
    })().catch(() => {})
    let timer: NodeJS.Timeout | undefined
    const up = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
    await Promise.race([reading, up])
    clearTimeout(timer)
  }
}

/** How long a shutdown waits for the last read of the streams followed here. */
const CLOSE_CATCH_UP_MS = 2_000

/** The streams among `heads` that are open with a lapsed lease. */
function lapsed(heads: Map<string, StreamState>, at = nowMs()): string[] {
  const runIds: string[] = []
  for (const [runId, head] of heads) {
    if (head.status === 'open' && head.leaseExpiresAt !== null && head.leaseExpiresAt < at) {
      runIds.push(runId)
    }
  }
  return runIds
}

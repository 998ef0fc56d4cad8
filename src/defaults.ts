/**
 * Every default of the package, in one place. Durations are in milliseconds, sizes in UTF-16 code
 * units (`maxTextRowChars`) or UTF-8 bytes (`maxFrameBytes`, `windowBytes`, `readerBytes`),
 * counts in rows or items.
 *
 * Config (`defineConfig`), the sink, the parking layer, the run driver and the HTTP transport read
 * these; nothing else spells a default out.
 */
export const DEFAULTS = Object.freeze({
  /** Longest time a writer holds text back to coalesce it into one row. */
  coalesceWindowMs: 40,
  /** A text row stops growing past this many UTF-16 code units. */
  maxTextRowChars: 16_384,
  /** Cap on one frame's serialized size, in bytes (256 KiB). */
  maxFrameBytes: 262_144,
  /**
   * Cap on the agent's state (`state` event frames, the page's `RunAgentInput.state` / useChat
   * body `state`), in bytes of JSON (64 KiB): a snapshot, or the state a delta leaves.
   */
  maxStateBytes: 65_536,
  /** Cap on a `custom` event's value, as JSON, in bytes (64 KiB). */
  maxCustomValueBytes: 65_536,
  /** A writer silent this long (crashed, killed) has its stream failed. */
  leaseMs: 15_000,
  /**
   * How long a run in flight survives the database being unreachable (a restart, a failover):
   * its writer holds frames in memory and retries; past this the run fails.
   */
  outageBoundMs: 30_000,
  /** Most bytes (UTF-8) of frames one writer holds in memory while the database is unreachable. */
  outageBufferBytes: 4_194_304,
  /** Retries while the database is unreachable: the delay doubles from `min` up to `max`. */
  outageRetry: Object.freeze({ min: 50, max: 1000 }),
  /** Poll of followed streams' heads when polling is the only cross-replica wake-up. */
  pollIntervalMs: 100,
  /** The same poll as the slow safety net beside LISTEN/NOTIFY. */
  pollBesideNotifyMs: 1000,
  /** PostgreSQL NOTIFY channel, and the Redis notifier's channel. */
  notifyChannel: 'agent_stream',
  /** LISTEN (and Redis subscriber) reconnect backoff: doubles from `min` up to `max`. */
  notifyReconnect: Object.freeze({ min: 100, max: 5000 }),
  /** The LISTEN (or Redis subscriber) connection stays this long after the last reader left. */
  notifyLingerMs: 10_000,
  /** The LISTEN connection's check that it hears NOTIFY (PgBouncer in transaction mode does not). */
  listenProbe: Object.freeze({ timeoutMs: 5000, everyMs: 300_000 }),
  /** Time an ended stream is kept before `purge()` removes it (24 h). */
  ttlMs: 86_400_000,
  /** Streams removed per purge transaction (with everything they own). */
  purgeBatch: 100,
  /**
   * A row a stream owns whose stream is gone is a purge's to delete only once this old: a door
   * records its run an instant before the run's stream opens (1 h).
   */
  orphanGraceMs: 3_600_000,
  /** Deliveries kept in memory per followed stream for readers that keep up. */
  windowSize: 512,
  /** ...and their most in UTF-8 bytes (1 MiB), per followed stream; also a tail read's most. */
  windowBytes: 1_048_576,
  /** Rows per store read. */
  pageSize: 500,
  /**
   * Group commit: most streams whose appends ride in one transaction (500: a group's statements
   * hold one `(run_id, seq)` term per grown text row, and SQLite parses at most 1,000 deep).
   * At most `groupCommitsInFlight` groups are in flight at a time per sink; the appends asked
   * meanwhile wait for one and go together in the next. A message's first text asked meanwhile
   * goes alone at once, at most `groupCommitLeadingAlone` such at a time (issue 26: 400 runs
   * starting at once queued 400 transactions on the pool ahead of the next group).
   */
  groupCommitMembers: 500,
  groupCommitsInFlight: 2,
  groupCommitLeadingAlone: 4,
  /**
   * UTF-8 bytes of frames held in memory for one reader and not yet handed on (a store page, a
   * batch from the feed): 1 MiB, or one frame when a frame is larger. A reader that stops
   * reading pins no more than this, plus what is in flight to its socket.
   */
  readerBytes: 1_048_576,
  /** Rows of a re-attaching reader's first store read (it wants its first frame fast). */
  firstPageSize: 16,
  /** Run ids per heads query. */
  headsBatch: 500,
  /**
   * Rows per stream when a tail reads the streams woken together in one read (a stream with
   * more is read on alone). Few: a wake-up usually means a row or two.
   */
  tailBatchRows: 8,
  /**
   * ...and streams per such read: more woken at once are read in several, one after the other
   * (a query's OR list stays short: SQLite caps an expression's depth at 1000, MariaDB slows
   * down faster than the list grows).
   */
  tailBatchStreams: 100,
  /** SSE comment line (`: ping`) after this long without a write. */
  heartbeatMs: 15_000,
  /**
   * A replica whose clock disagrees with the database's by more than this warns (at start and
   * at every sweep); its times are the database's either way (`src/store/clock.ts`).
   */
  clockSkewWarnMs: 2000,
  /**
   * A replica's read slower than a third of a lease (at least this) means the database or the
   * process stalled: lapsed leases wait a lease length of healthy reads (`follow/read_health.ts`).
   */
  slowReadFloorMs: 200,
  /** How often each replica expires lapsed items and resumes ready suspensions. */
  sweepIntervalMs: 5000,
  /** A claimed suspension not started within this long is claimable again. */
  claimLeaseMs: 30_000,
  /**
   * A graceful shutdown (`shutdown.drain`): how long runs in flight on the replica get to
   * finish before their agent is aborted and their streams end `replica_shutdown`.
   */
  drainMs: 5000,
  /**
   * After a stop aborted a segment's `signal`, how long its runner may take to return (its
   * partial answer flushed) before the segment ends `cancelled` without it.
   */
  stopGraceMs: 2000,
  /** How long a stop request waits for the run to end before answering `stopping` (202). */
  stopWaitMs: 5000,
  /** `Retry-After` (seconds) of the 503 `replica_shutdown` refusal of a draining replica. */
  retryAfterSeconds: 1,
  /** Parked items per page of `ParkingQueries.list` (and the queue's pages), and its most. */
  parkedPerPage: 20,
  parkedPerPageMax: 100,
  /** Items expired, resumed or abandoned per sweep step. */
  sweepBatch: 100,
  /** Messages one thread's busy-thread queue holds at most (`multitaskStrategy: 'enqueue'`). */
  maxQueuedRuns: 8,
  /**
   * How often a client waiting for its queued message asks whether it started (on another
   * replica; a start on its own replica wakes it at once).
   */
  queuedPollMs: 250,
  /**
   * Approvals and question sets one segment may have waiting at once (an AG-UI resume answers
   * all of them: it takes this many entries). The next one is refused.
   */
  maxItemsPerSegment: 1000,
  /**
   * Re-attach checkpoints of both doors (`src/checkpoints`, per replica, in memory): the
   * translator's state is kept every this many rows of a stream it translated, so a re-attach
   * (AG-UI) or a resume at a cursor (useChat) translates only what follows the nearest one.
   */
  checkpointEvery: 64,
  /** ...for this many streams at most (the least recently used go first)... */
  checkpointStreams: 256,
  /** ...and this many per stream at most (past it, every other one goes: the spacing doubles). */
  checkpointsPerStream: 256,
  /**
   * ...and this many bytes of translator state in all, per door (64 MiB; UTF-8 bytes of the
   * states' JSON). A state holds what is open in its run, not its history (docs/checkpoints.md);
   * one over this is not kept, and the sink's `onError` is told (`checkpoint_oversize`).
   */
  checkpointBytes: 67_108_864,
  /**
   * Stored checkpoints (the `checkpoints` table): an in-memory checkpoint that crosses a
   * multiple of this many rows is also stored, in the background, so a replica that never
   * served a stream (restarted, or another one behind the load balancer) re-attaches near too.
   * A re-attach reads the stored nearest when its in-memory one is missing or this far back.
   */
  storedCheckpointEvery: 128,
  /**
   * ...and a state above this many bytes (UTF-8 of its JSON; 256 KiB) is not stored (the sink's
   * `onError` is told, once a stream: `checkpoint_oversize`).
   */
  storedCheckpointBytes: 262_144,
  /**
   * What the AG-UI door's segment cache keeps per replica about streams it served (where a
   * segment ended, an AG-UI run's bounds as of a stream revision): this many of each at most.
   */
  segmentCache: 4096,
  /**
   * A thread's earlier turns a new run (or a resume) is given (`RunContext.conversation()`,
   * `aiSdkAgent`): this many turns at most, and this many UTF-8 bytes of their frames (as JSON,
   * 1 MiB). Past either, the oldest turns are left out whole.
   */
  history: Object.freeze({ maxTurns: 100, maxBytes: 1_048_576 }),
  /**
   * Cap on a JSON request body, in bytes as received, on every body route of both transports
   * (1 MiB; a door's `maxBodyBytes` overrides it for its own routes): 413 `body_too_large`.
   */
  maxBodyBytes: 1_048_576,
  /**
   * A body the transport refused before reading it whole (413, 415, 401...) is read on and
   * discarded up to this many more bytes (64 MiB), so the client, still sending, gets the
   * refusal instead of a reset connection; past it the connection is closed.
   */
  discardBodyBytes: 67_108_864,
  /**
   * Per-principal limits (config `limits`; off unless the config has it): each rule's values
   * when `limits` names it as `true` (the config stub's). `runStarts`: POSTs that start or
   * continue a run (both doors' run routes, the native start), this many per `duration` (ms);
   * `streams`: SSE responses open at once (both doors and the native stream), a count that
   * lapses `window` (ms) after it was first taken (what a replica that died holding streams
   * leaves behind, in a shared store); `decisions`: the decision routes, this many per `duration`.
   */
  limits: Object.freeze({
    runStarts: Object.freeze({ requests: 30, duration: 60_000 }),
    streams: Object.freeze({ concurrent: 16, window: 900_000 }),
    decisions: Object.freeze({ requests: 120, duration: 60_000 }),
  }),
  /** `Retry-After` (seconds) of the 429 `too_many_streams` refusal: a slot frees when a stream ends. */
  streamRetryAfterSeconds: 5,
})

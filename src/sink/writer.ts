import {
  InvalidFrameError,
  LeaseLostError,
  StreamClosedError,
  type StoreUnavailableError,
} from '../errors.js'
import { isRefusal } from '../store/transient.js'
import { hostToDatabaseInstant } from '../store/clock.js'
import type { RunMeta } from '../core/run.js'
import type { StreamFrame } from '../core/frames.js'
import type { SinkWriter } from './spi.js'
import type { AppendPlan } from '../store/append_plan.js'
import type { AppendContext } from './append.js'
import { Outage } from './outage.js'
import { RetriedCommits } from './retried_commit.js'
import { LeaseRenewal } from './lease.js'
import { OutageBuffer } from './outage_buffer.js'
import { SplitPair } from './split_pair.js'
import { isStateFrame } from '../core/agent_state.js'
import { AgentStateCheck, snapshotChecked } from './agent_state_check.js'
import { DEFAULTS } from '../defaults.js'
import type { WriterOptions } from './writer_options.js'
import { TextRow } from './text_row.js'
import { parkPlan } from './park_plan.js'
import { TakenOver } from './taken_over.js'
import { LostRun, type LossReason } from './lost_run.js'

export type { ParkHook, WriterOptions } from './writer_options.js'

/**
 * The writer of one run's stream, over Lucid (see `LucidTokenStreamSink.open`; docs/sink.md).
 *
 * - Text coalescing (text_row.ts): the first text after another frame or a quiet period is
 *   written at once, in a new row; text after it is held and grows that row, so readers have it
 *   within `coalesceWindowMs`. Any other frame, `flush()` and `end()` write held text first.
 * - Code points (split_pair.ts): a high surrogate at a write's end is held for the low half the
 *   next text write starts with; a half whose other half does not come next is written as
 *   U+FFFD, never failing the run; a lone surrogate inside one write is refused.
 * - Every write is ordered after the previous one; a frame that fails validation is refused
 *   (`InvalidFrameError`) and nothing is stored; a commit that failed in the background (the
 *   held text's timer) rejects the next `write`, `flush` or `end`.
 * - A database outage: a commit failing with a transient error is retried with backoff (its
 *   token makes a retry whose COMMIT's outcome is unknown land once), frames written meanwhile
 *   wait in memory, in order, and `write()` acknowledges them at once. Past `outageBoundMs` or
 *   `outageBufferBytes`, or at a refusal (`isRefusal`: trying again cannot cure it), the run is
 *   lost (lost_run.ts): every call throws `StoreUnavailableError`, the agent is stopped
 *   (`onLost`), and the failure is written once the database answers.
 */
export class LucidSinkWriter implements SinkWriter {
  #queue: Promise<unknown> = Promise.resolve()
  /** The text held to coalesce and the row it grows (text_row.ts). */
  #text: TextRow
  #failure: unknown = null
  #ended = false
  #ending = false
  #released = false
  #onRelease: (() => void) | undefined
  #lease: LeaseRenewal
  #metas = new Map<string, RunMeta>()
  /** The database outage this writer is in, if any (its bound loses the run). */
  #outage: Outage
  /** The run lost to the database, once it is: every call throws its error (lost_run.ts). */
  #lost: LostRun
  /** Whether another replica took the stream over (its epoch moved on). */
  #takenOver: TakenOver
  /** What is held in memory during an outage (bounded in bytes), and its callers. */
  #buffer: OutageBuffer
  #commits: RetriedCommits
  /** A high surrogate held for its low half (text at code-point granularity). */
  #pair: SplitPair
  /** A `state` snapshot's own rules (at once); its state is checked when it commits. */
  #maxStateBytes: number
  /** The sink's write path: its store, this replica's tail and the frame size cap. */
  #context: AppendContext

  constructor(
    readonly runId: string,
    context: AppendContext,
    readonly options: WriterOptions
  ) {
    this.#context = context
    this.#text = new TextRow(options.coalesceWindowMs, options.maxTextRowChars)
    this.#takenOver = new TakenOver(() => context.store.epochOf(runId), options.epoch)
    this.#maxStateBytes = options.maxStateBytes ?? DEFAULTS.maxStateBytes
    // The agent's state, checked in each commit against what the stream's rows leave.
    this.#commits = new RetriedCommits(
      context,
      runId,
      options.openedAtSeq,
      options.epoch,
      new AgentStateCheck(this.#maxStateBytes, context.store.tables)
    )
    this.#lost = new LostRun(runId, context, this.#commits, options.onError)
    this.#pair = new SplitPair(options.maxFrameBytes)
    this.#outage = new Outage(options.outageBoundMs, {
      // Callers waiting for a commit go on: their frames are held.
      began: () => this.#buffer.releaseWaiting(),
      exceeded: () => this.#lose('bound'),
    })
    this.#buffer = new OutageBuffer(options.outageBufferBytes, this.#outage)
    this.#lease = new LeaseRenewal(
      context.store,
      runId,
      options.leaseMs,
      this.#outage,
      () => void this.#closedUnder(),
      options.epoch
    )
  }

  /**
   * A lease renewal found the stream closed, or no longer this writer's: which one is read (an
   * epoch that moved on means another replica took the segment over), then the writer lets go.
   */
  async #closedUnder() {
    const lost = await this.#takenOver.check()
    this.#failure ??= lost ? new LeaseLostError(this.runId) : new StreamClosedError(this.runId)
    this.release()
  }

  /** Whether another replica took the stream over: this writer writes nothing more. */
  get leaseLost() {
    return this.#takenOver.taken
  }

  /**
   * Whether this writer still holds its stream, read now (no other replica took it over since;
   * a read that fails says yes: the commits check it again). Marks {@link leaseLost} when not.
   */
  async holdsStream(): Promise<boolean> {
    return !(await this.#takenOver.check())
  }

  /** Called once if another replica takes the stream over (the driver stops the agent). */
  set onLeaseLost(callback: () => void) {
    this.#takenOver.onTaken = callback
  }

  /**
   * Write for a delegated run too: its approvals and elicitations park under its own meta (its
   * parent, thread, principal) while its frames share this writer, in order.
   */
  adopt(meta: RunMeta) {
    this.#metas.set(meta.runId, meta)
  }

  /** Whether the lease renewal timer runs. */
  get leasing() {
    return this.#lease.running
  }

  /** Whether `end()` was called (or the stream was found closed). */
  get ended() {
    return this.#ended
  }

  /** The error every call throws once the run was lost to a database outage, else `null`. */
  get lost(): StoreUnavailableError | null {
    return this.#lost.error
  }

  /** When the current database outage began (epoch milliseconds), `null` when there is none. */
  get outageSince(): number | null {
    return this.#outage.since
  }

  /** Called once if the run is lost to a database outage (the driver stops the agent). */
  set onLost(callback: () => void) {
    this.#lost.onLost = callback
  }

  /**
   * Write a frame. Resolves once the frame is committed, or, for text held back to coalesce,
   * once it is accepted; while the database is unreachable, once it is held in memory (an
   * approval or elicitation always waits for its commit: the run parks on it).
   *
   * @throws InvalidFrameError when the frame breaks the SPI (nothing stored)
   * @throws StreamClosedError after `end()`, or when the stream was ended elsewhere or purged
   * @throws StoreUnavailableError once the run was lost to a database outage
   */
  async write(frame: StreamFrame): Promise<void> {
    this.#assertWritable()
    // Validation starts now and is awaited in the queue: frames of different kinds take
    // different numbers of ticks to validate, and writes must keep the order they were made in.
    // A text write is joined with a half held before it there, in write order (split_pair.ts).
    // A `state` snapshot's own rules are checked now; its state once it commits, against the
    // stream's as stored (whoever wrote it).
    const paired = this.#pair.check(frame)
    const valid = isStateFrame(frame) ? snapshotChecked(paired, this.#maxStateBytes) : paired
    valid.catch(() => {})
    const bytes = this.#buffer.queued(frame)
    const done = this.#enqueue(async () => {
      this.#buffer.dequeued(bytes)
      if (this.#lost.error) throw this.#lost.error
      return this.#apply(await this.#pair.accept(frame, valid))
    })
    if (this.#buffer.over) this.#lose('buffer')
    if (frame.t === 'approval' || frame.t === 'elicitation') return done
    return this.#buffer.acknowledged(done, valid, (error) => {
      // Only reached once `valid` passed: a refusal now (a joined pair past the size cap) was
      // not given to its caller, so the next call throws it; a lost run throws on every call.
      if (error !== this.#lost.error) this.#failure ??= error
    })
  }

  /**
   * Write out held text without ending the stream (a held high half becomes U+FFFD). Resolves
   * once everything written before is committed (through a database outage, up to its bound).
   *
   * @throws StreamClosedError, StoreUnavailableError (see `write`)
   */
  async flush(): Promise<void> {
    this.#assertWritable()
    return this.#enqueue(() => {
      this.#breakPair()
      return this.#commit()
    })
  }

  /**
   * Write held text and the end marker; the stream is finished for its readers. Resolves once
   * the end is committed (through a database outage, up to its bound). `last`: a frame that ends
   * the run for its readers (an `error` frame, the `cancelled` event), committed with the end
   * marker in one transaction: a reader never sees the run's end before the stream ended (a
   * client that answers `RUN_ERROR` with its next message finds the thread free).
   *
   * @throws StreamClosedError, StoreUnavailableError (see `write`)
   */
  async end(options: { within?: AppendPlan['within']; last?: StreamFrame } = {}): Promise<void> {
    if (this.#ended && !this.#failure) return
    this.#assertWritable()
    const last = options.last
    const valid = last ? snapshotChecked(this.#pair.check(last), this.#maxStateBytes) : null
    valid?.catch(() => {})
    // Refuse new writes at once; the writer only counts as ended once the end marker committed,
    // so a failed end() can be retried (and the lease keeps the stream alive meanwhile).
    this.#ending = true
    try {
      await this.#enqueue(async () => {
        this.#breakPair()
        const frames = valid ? [await valid] : []
        return this.#commit({ frames, end: 'ended', within: options.within })
      })
    } catch (error) {
      this.#ending = false
      throw error
    }
    this.release()
  }

  /**
   * Let go of the stream without ending it: no more writes, no more lease renewals. What was
   * written stays; held text that was not flushed is dropped. A delegated child's writer does
   * this at its end (the parent owns the stream); the sink does it on shutdown.
   */
  release() {
    if (this.#released) return
    this.#released = true
    this.#ended = true
    this.#lease.stop()
    // A released writer never fails the stream for an outage: it let go of it.
    if (!this.#lost.error) this.#outage.stop()
    this.#text.stopTimer()
    this.#pair.clear()
    // A lost run's failure is still being written: the sink forgets the writer after that.
    const recording = this.#lost.recording
    if (recording) void recording.finally(() => this.#onRelease?.())
    else this.#onRelease?.()
  }

  /** Release, and stop writing a lost run's failure too (the sink is shutting down). */
  shutdown() {
    this.#lost.stop()
    this.release()
  }

  /** Called once when the writer is released (the sink forgets it). */
  set onRelease(callback: () => void) {
    this.#onRelease = callback
  }

  #assertWritable() {
    if (this.#lost.error) throw this.#lost.error
    if (this.#failure) {
      const failure = this.#failure
      this.#failure = null
      throw failure
    }
    if (this.#ended || this.#ending) throw new StreamClosedError(this.runId)
  }

  #enqueue<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(work)
    this.#queue = next.catch(() => {})
    return next
  }

  /** The held high half's pair is broken (another frame, flush, end): it is written as U+FFFD. */
  #breakPair() {
    const broken = this.#pair.break()
    if (!broken) return
    this.#text.addBroken(broken)
    this.#buffer.hold(broken)
  }

  async #apply(frame: StreamFrame) {
    if (frame.t === 'text') {
      if (frame.v.length === 0) return
      const decision = this.#text.add(frame.v)
      this.#buffer.hold(frame.v)
      if (decision.write === 'now') {
        // A message's first text (no row grown yet): its own transaction, at once.
        return this.#commit(this.#text.leading ? { frames: [], leading: true } : undefined)
      }
      this.#text.hold(decision.delayMs, () => {
        this.#enqueue(() => this.#commit()).catch((error) => {
          this.#failure = error
        })
      })
      return
    }
    this.#breakPair()
    if (frame.t === 'component' && frame.partial) {
      await this.#commit()
      this.#context.tail.partial(this.runId, frame)
      return
    }
    // An approval's expiry is an instant of the agent's clock (this host's): it is stored in the
    // database's, which every replica's sweeper and decisions compare it with.
    if (frame.t === 'approval' && frame.expiresAt) {
      frame = { ...frame, expiresAt: hostToDatabaseInstant(frame.expiresAt) }
    }
    const park = this.options.park
    if (park && (frame.t === 'approval' || frame.t === 'elicitation')) {
      const meta = this.#metas.get(frame.runId) ?? this.options.meta
      await this.#commit(parkPlan(frame, meta, park))
      return
    }
    try {
      await this.#commit({ frames: [frame] })
    } catch (error) {
      // A `state` frame its commit refused (its delta does not apply to the stream's state):
      // the text held with it is written on its own, nothing of the frame.
      if (error instanceof InvalidFrameError && this.#text.held) await this.#commit()
      throw error
    }
  }

  /**
   * Commit held text and `plan` (its frames, validated when written) in one transaction through
   * the sink's one write path (`appendFrames`), which hands them to this replica's tail. A
   * transient failure is retried (same token: a retry first checks whether the attempt landed)
   * until the database answers or the run is lost.
   */
  async #commit(plan: AppendPlan = { frames: [] }): Promise<void> {
    if (this.#lost.error) throw this.#lost.error
    this.#text.stopTimer()
    const text = this.#text.pending()
    if (!text && plan.frames.length === 0 && !plan.end) return
    let committed
    try {
      committed = await this.#commits.append(
        { ...plan, validated: true, leaseMs: this.options.leaseMs, text },
        this.#outage,
        () => this.#lost.error
      )
    } catch (error) {
      if (error instanceof LeaseLostError) this.#takenOver.mark()
      if (error instanceof StreamClosedError) {
        this.#failure = error
        this.release()
      } else if (isRefusal(error)) {
        // Refused by the database: trying again would never end.
        this.#lose('refused', error)
        throw this.#lost.error
      }
      throw error
    }
    const result = committed.result
    if (!result) return
    // Any other frame closes the text row: the next text starts a new one.
    this.#text.committed(text, result, committed.ms, plan.frames.length > 0 || Boolean(plan.end))
    this.#buffer.released()
  }

  /**
   * The run is lost (lost_run.ts): drop what is held, stop renewing the lease (a lost writer
   * must not keep the stream alive), then tell the driver and write the failure once the
   * database answers.
   */
  #lose(reason: LossReason, cause?: unknown) {
    if (!this.#lost.lose(reason, cause)) return
    this.#text.drop()
    this.#buffer.released()
    this.#lease.stop()
    // A commit waiting to retry gives up at once (its callers get the error).
    this.#outage.stop()
    this.#lost.record()
  }
}

import { StreamClosedError } from '../errors.js'
import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { CommitResult, StreamStore } from '../store/stream_store.js'
import type { RunMeta } from '../core/run.js'
import type { Tail } from '../follow/tail.js'
import type { StreamFrame } from '../core/frames.js'
import type { SinkWriter } from './spi.js'
import { validateFrame } from './validate.js'
import { appendFrames, type AppendContext, type AppendPlan } from './append.js'
import { averageCommitMs, coalesceText } from './coalescing.js'
import { joinSplitPair, REPLACEMENT_CHARACTER } from '../core/text.js'

/**
 * Called inside the transaction that stores an `approval` or `elicitation` frame, so the parking
 * row and the suspension commit with the frame or not at all (DESIGN.md invariant 6). Resolves
 * to the park the frame opened or joined, which is stamped into the stored frame (`park`).
 */
export type ParkHook = (
  trx: TransactionClientContract,
  meta: RunMeta,
  frame: Extract<StreamFrame, { t: 'approval' | 'elicitation' }>,
  seq: number
) => Promise<number>

export interface WriterOptions {
  /** Longest time text is held back before it is written, in milliseconds. */
  coalesceWindowMs: number
  /** A text row stops growing past this many UTF-16 code units; more text starts a new row. */
  maxTextRowChars: number
  /** Cap on one frame's serialized size, in bytes. */
  maxFrameBytes: number
  /** The writer's lease, in milliseconds: renewed while it is open, lapses if the process dies. */
  leaseMs: number
  /** The run writing (a delegated run's own id, parent, thread, principal). */
  meta: RunMeta
  /** Parks approvals and elicitations in the frame's transaction; none = they are stored only. */
  park?: ParkHook
}

/**
 * The writer of one run's stream, over Lucid (see `LucidTokenStreamSink.open`).
 *
 * Text coalescing: the first text after another frame (or after a quiet period as long as the
 * window) is written at once, in a new row: time to first token is what a person feels. Text that
 * follows is held and appended to that same row so that readers have it within
 * `coalesceWindowMs` of its write (the hold is the window less the recent commit time), and a
 * message of any length stays one row. Any other frame, `flush()` and `end()` write held
 * text first, in the same transaction.
 *
 * Code points: a text write that ends with a high surrogate (a tokenizer cut inside a pair) has
 * that half held back, never committed alone, and joined with the low half the next text write
 * starts with; text is thus cut, held, stored and addressed only between code points (rows,
 * cursor offsets). A half whose other half does not come next (another text, any other frame,
 * `flush()`, `end()`), or a low half at a write's start with nothing held, is written as U+FFFD:
 * a broken pair never fails the run. A lone surrogate inside one write is refused.
 *
 * Every write is ordered after the previous one. A frame that fails validation is refused
 * (`InvalidFrameError`) and nothing is stored. A commit that failed in the background (the held
 * text's timer) rejects the next `write`, `flush` or `end`.
 */
export class LucidSinkWriter implements SinkWriter {
  #queue: Promise<unknown> = Promise.resolve()
  #held = ''
  /** A high surrogate the last text write ended with, held for its low half ('' when none). */
  #highHalf = ''
  #timer: NodeJS.Timeout | null = null
  /** The text row this writer grows: its seq and whole body. */
  #row: { seq: number; body: string } | null = null
  #lastTextAt = Number.NEGATIVE_INFINITY
  /** Moving average of a commit's duration (ms): held text is written early by that much. */
  #commitMs = 0
  #failure: unknown = null
  #ended = false
  #ending = false
  #released = false
  #onRelease: (() => void) | undefined
  #lease: NodeJS.Timeout | null = null
  #metas = new Map<string, RunMeta>()

  /** The sink's write path: store, tail and frame size cap. */
  readonly context: AppendContext

  constructor(
    readonly runId: string,
    readonly store: StreamStore,
    readonly tail: Tail,
    readonly options: WriterOptions
  ) {
    this.context = { store, tail, maxFrameBytes: options.maxFrameBytes }
    this.#lease = setInterval(() => void this.#renew(), Math.max(50, options.leaseMs / 3))
    this.#lease.unref()
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
    return this.#lease !== null
  }

  /** Whether `end()` was called (or the stream was found closed). */
  get ended() {
    return this.#ended
  }

  /**
   * Write a frame. Resolves once the frame is committed, or, for text held back to coalesce,
   * once it is accepted.
   *
   * @throws InvalidFrameError when the frame breaks the SPI (nothing stored)
   * @throws StreamClosedError after `end()`, or when the stream was ended elsewhere or purged
   */
  async write(frame: StreamFrame): Promise<void> {
    this.#assertWritable()
    // Validation runs in the queue too: frames of different kinds take different numbers of
    // ticks to validate, and writes must keep the order they were made in.
    return this.#enqueue(async () => this.#apply(await this.#validate(frame)))
  }

  /** Write out held text without ending the stream (a held high half becomes U+FFFD). */
  async flush(): Promise<void> {
    this.#assertWritable()
    return this.#enqueue(() => {
      this.#breakPair()
      return this.#commit([])
    })
  }

  /** Write held text and the end marker; the stream is finished for its readers. */
  async end(options: { within?: AppendPlan['within'] } = {}): Promise<void> {
    if (this.#ended && !this.#failure) return
    this.#assertWritable()
    // Refuse new writes at once; the writer only counts as ended once the end marker committed,
    // so a failed end() can be retried (and the lease keeps the stream alive meanwhile).
    this.#ending = true
    try {
      await this.#enqueue(() => {
        this.#breakPair()
        return this.#commit([], { end: 'ended', within: options.within })
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
    this.#stopLease()
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#highHalf = ''
    this.#onRelease?.()
  }

  /** Called once when the writer is released (the sink forgets it). */
  set onRelease(callback: () => void) {
    this.#onRelease = callback
  }

  #assertWritable() {
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

  /**
   * Validate a frame; a text write is first joined with the high half held from the previous one,
   * and its own trailing high half is held (only once the write is accepted).
   */
  async #validate(frame: StreamFrame): Promise<StreamFrame> {
    const max = this.options.maxFrameBytes
    const v = (frame as { v?: unknown } | null)?.v
    if (frame?.t !== 'text' || typeof v !== 'string') return validateFrame(frame, max)
    const joined = joinSplitPair(this.#highHalf, v)
    const valid = await validateFrame({ ...frame, v: joined.text }, max)
    this.#highHalf = joined.held
    return valid
  }

  /** The held high half's pair is broken (another frame, flush, end): it is written as U+FFFD. */
  #breakPair() {
    if (!this.#highHalf) return
    this.#highHalf = ''
    const rowChars = this.#row ? this.#row.body.length + this.#held.length : 0
    // The row stops growing at its cap, as for any text (coalescing.ts).
    if (rowChars + 1 > this.options.maxTextRowChars) this.#row = null
    this.#held += REPLACEMENT_CHARACTER
  }

  async #apply(frame: StreamFrame) {
    if (frame.t === 'text') {
      if (frame.v.length === 0) return
      const decision = coalesceText({
        rowChars: this.#row ? this.#row.body.length : null,
        heldChars: this.#held.length,
        addedChars: frame.v.length,
        now: Date.now(),
        lastTextAt: this.#lastTextAt,
        commitMs: this.#commitMs,
        windowMs: this.options.coalesceWindowMs,
        maxRowChars: this.options.maxTextRowChars,
      })
      this.#held += frame.v
      if (decision.write === 'now') {
        if (decision.newRow) this.#row = null
        return this.#commit([])
      }
      if (!this.#timer) {
        this.#timer = setTimeout(() => {
          this.#timer = null
          this.#enqueue(() => this.#commit([])).catch((error) => {
            this.#failure = error
          })
        }, decision.delayMs)
      }
      return
    }
    this.#breakPair()
    if (frame.t === 'component' && frame.partial) {
      await this.#commit([])
      this.tail.partial(this.runId, frame)
      return
    }
    const park = this.options.park
    if (park && (frame.t === 'approval' || frame.t === 'elicitation')) {
      const meta = this.#metas.get(frame.runId) ?? this.options.meta
      await this.#commit([frame], {
        within: async (trx, stored) => {
          const row = stored.find((r) => r.kind === frame.t)!
          const number = await park(trx, meta, frame, row.seq)
          // Which park the frame is part of is known only now: every reader (live or replayed)
          // gets it in the frame, so a decision can name it.
          await this.store.rewrite(trx, this.runId, row, JSON.stringify({ ...frame, park: number }))
        },
      })
      return
    }
    await this.#commit([frame])
  }

  /**
   * Commit held text and `frames` in one transaction through the sink's one write path
   * ({@link appendFrames}), which hands them to this replica's tail.
   */
  async #commit(frames: StreamFrame[], plan: AppendPlan = {}): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    const held = this.#held
    if (held.length === 0 && frames.length === 0 && !plan.end) return
    let result: CommitResult | null = null
    const started = performance.now()
    try {
      result = await appendFrames(this.context, this.runId, frames, {
        ...plan,
        validated: true,
        leaseMs: this.options.leaseMs,
        text: held
          ? { seq: this.#row?.seq ?? null, prefix: this.#row?.body ?? '', text: held }
          : undefined,
      })
    } catch (error) {
      if (error instanceof StreamClosedError) {
        this.#failure = error
        this.release()
      }
      throw error
    }
    if (!result) return
    this.#commitMs = averageCommitMs(this.#commitMs, performance.now() - started)
    this.#held = ''
    if (held) {
      this.#lastTextAt = Date.now()
      if (result.grown) {
        this.#row = { seq: result.grown.seq, body: result.grown.body }
      } else {
        const inserted = result.rows.find((row) => row.kind === 'text')!
        this.#row = { seq: inserted.seq, body: inserted.body }
      }
    }
    // Any other frame closes the text row: the next text starts a new one.
    if (frames.length > 0 || plan.end) this.#row = null
  }

  async #renew() {
    try {
      const open = await this.store.renewLease(this.runId, this.options.leaseMs)
      if (!open) {
        this.#failure = new StreamClosedError(this.runId)
        this.release()
      }
    } catch {
      // A transient database error: the next renewal or write tries again.
    }
  }

  #stopLease() {
    if (this.#lease) clearInterval(this.#lease)
    this.#lease = null
  }
}

import type { CommitResult, HeldText } from '../store/append_plan.js'
import { averageCommitMs, coalesceText, type CoalescingDecision } from './coalescing.js'

/**
 * The text a writer holds to coalesce, and the text row it grows (see `LucidSinkWriter`): what
 * is held, the row's seq and whole body, when text was last committed, the moving average of a
 * commit's time, and the timer that commits held text within the window. The decisions are
 * `coalescing.ts`'s; this keeps their state.
 */
export class TextRow {
  /** Text written and not committed yet. */
  held = ''
  /** The text row being grown: its seq and whole body; `null`: the next text starts a row. */
  #row: { seq: number; body: string } | null = null
  #lastTextAt = Number.NEGATIVE_INFINITY
  /** Moving average of a commit's duration (ms): held text is written early by that much. */
  #commitMs = 0
  #timer: NodeJS.Timeout | null = null

  constructor(
    /** How long text is held at most (`coalesceWindowMs`). */
    readonly windowMs: number,
    /** A row stops growing past this many UTF-16 code units (`maxTextRowChars`). */
    readonly maxRowChars: number
  ) {}

  /** Hold `text`: whether to commit now (into a new row) or within how long (`coalesceText`). */
  add(text: string): CoalescingDecision {
    const decision = coalesceText({
      rowChars: this.#row ? this.#row.body.length : null,
      heldChars: this.held.length,
      addedChars: text.length,
      now: Date.now(),
      lastTextAt: this.#lastTextAt,
      commitMs: this.#commitMs,
      windowMs: this.windowMs,
      maxRowChars: this.maxRowChars,
    })
    this.held += text
    if (decision.write === 'now' && decision.newRow) this.#row = null
    return decision
  }

  /** Hold a broken pair's U+FFFD: a row at its cap stops growing, as for any text. */
  addBroken(text: string) {
    const rowChars = this.#row ? this.#row.body.length + this.held.length : 0
    if (rowChars + text.length > this.maxRowChars) this.#row = null
    this.held += text
  }

  /** Whether no row is being grown: a commit now holds a message's first text. */
  get leading() {
    return this.#row === null
  }

  /** Commit held text through `commit` within `delayMs`, unless a timer already runs. */
  hold(delayMs: number, commit: () => void) {
    if (this.#timer) return
    this.#timer = setTimeout(() => {
      this.#timer = null
      commit()
    }, delayMs)
  }

  /** Stop the timer (a commit now takes the held text, or nothing is committed any more). */
  stopTimer() {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }

  /** Drop the held text, and its timer (the run is lost). */
  drop() {
    this.held = ''
    this.stopTimer()
  }

  /** The held text as a commit carries it (the row it grows), `undefined` when none. */
  pending(): HeldText | undefined {
    if (!this.held) return undefined
    return { seq: this.#row?.seq ?? null, prefix: this.#row?.body ?? '', text: this.held }
  }

  /**
   * A commit that carried `text` (`pending()`'s) stored `result` in `ms`: the text is no longer
   * held, the row is the one it grew or inserted; `closes` (it stored another frame, or the end)
   * closes the row: the next text starts a new one.
   */
  committed(text: HeldText | undefined, result: CommitResult, ms: number, closes: boolean) {
    if (!result.landed) this.#commitMs = averageCommitMs(this.#commitMs, ms)
    this.held = ''
    if (text) {
      this.#lastTextAt = Date.now()
      const row = result.grown ?? result.rows.find((r) => r.kind === 'text')!
      this.#row = { seq: row.seq, body: row.body }
    }
    if (closes) this.#row = null
  }
}

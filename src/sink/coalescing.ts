/**
 * The writer's text coalescing decision, pure (no clock, no I/O): the caller passes the time.
 *
 * The first text after another frame (no text row being grown), or after a quiet period as long
 * as the window, is written at once: time to first token is what a person feels. Text that
 * follows is held and appended to the same row so that readers have it within the window (the
 * hold is the window less the recent commit time, at least 1 ms). A row stops growing past
 * `maxRowChars`: the text that would overflow it is written at once into a new row.
 */
export interface CoalescingInput {
  /** Length (UTF-16 code units) of the text row the writer grows; `null` when there is none. */
  rowChars: number | null
  /** Text already held, not yet written (UTF-16 code units). */
  heldChars: number
  /** Length of the text being written now. */
  addedChars: number
  /** Now, and when text was last committed, in milliseconds on the same clock. */
  now: number
  lastTextAt: number
  /** Moving average of a commit's duration, in milliseconds. */
  commitMs: number
  /** Longest hold, in milliseconds. */
  windowMs: number
  /** A text row stops growing past this many UTF-16 code units. */
  maxRowChars: number
}

export type CoalescingDecision =
  /** Commit the held text and this text now; `newRow`: into a new row (the current one is full). */
  | { write: 'now'; newRow: boolean }
  /** Hold it; commit within `delayMs` (a timer already running keeps its own time). */
  | { write: 'hold'; delayMs: number }

export function coalesceText(input: CoalescingInput): CoalescingDecision {
  const quiet = input.now - input.lastTextAt >= input.windowMs
  const fits =
    input.rowChars !== null &&
    input.rowChars + input.heldChars + input.addedChars <= input.maxRowChars
  if (input.rowChars === null || quiet || !fits) return { write: 'now', newRow: !fits }
  // The window bounds when readers HAVE the text, so the commit's own time comes off it.
  return { write: 'hold', delayMs: Math.max(1, input.windowMs - input.commitMs) }
}

/** The moving average of a commit's duration after one more sample (milliseconds). */
export function averageCommitMs(previous: number, sample: number): number {
  return 0.8 * previous + 0.2 * sample
}

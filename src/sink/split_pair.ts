import type { StreamFrame } from '../core/frames.js'
import { joinSplitPair, REPLACEMENT_CHARACTER } from '../core/text.js'
import { validateFrame } from './validate.js'

/**
 * A writer's text at code-point granularity (see `core/text.ts`): a text write that ends with a
 * high surrogate has that half held, never committed alone, and joined with the low half the
 * next text write starts with; a half whose other half does not come next becomes U+FFFD.
 *
 * Validation is in two steps so that a writer can answer its caller before earlier commits
 * finish (a database outage): {@link check} starts at once, on the frame as if nothing were held;
 * {@link accept}, in the writer's queue, joins it with the half held then. The joined text is
 * checked again only when a half was held (it is then what differs, by a few bytes at most).
 */
export class SplitPair {
  /** A high surrogate the last accepted text write ended with ('' when none). */
  #high = ''

  constructor(
    /** Cap on one frame's serialized size, in bytes. */
    readonly maxFrameBytes: number
  ) {}

  /**
   * Validate a frame now, a text frame's edges taken as if no half were held.
   *
   * @throws InvalidFrameError (rejects) when the frame breaks the SPI
   */
  check(frame: StreamFrame): Promise<StreamFrame> {
    const v = (frame as { v?: unknown } | null)?.v
    if (frame?.t !== 'text' || typeof v !== 'string') {
      return validateFrame(frame, this.maxFrameBytes)
    }
    return validateFrame({ ...frame, v: joinSplitPair('', v).text }, this.maxFrameBytes)
  }

  /**
   * In the writer's queue, in write order: the frame as it is applied. A text write is joined
   * with the high half held from the previous one, and its own trailing high half is held (only
   * once the write is accepted: a refused write changes nothing).
   *
   * @param checked what {@link check} returned for `frame`
   * @throws InvalidFrameError when the frame (or its text joined with a held half) is refused
   */
  async accept(frame: StreamFrame, checked: Promise<StreamFrame>): Promise<StreamFrame> {
    const valid = await checked
    if (valid.t !== 'text') return valid
    const joined = joinSplitPair(this.#high, (frame as { v: string }).v)
    const result = this.#high
      ? await validateFrame({ ...frame, v: joined.text }, this.maxFrameBytes)
      : valid
    this.#high = joined.held
    return result
  }

  /**
   * The held half's pair is broken (another frame, `flush()`, `end()`): returns the text to write
   * in its place, U+FFFD, or `''` when no half is held.
   */
  break(): string {
    if (!this.#high) return ''
    this.#high = ''
    return REPLACEMENT_CHARACTER
  }

  /** Forget the held half (the writer let go of the stream). */
  clear() {
    this.#high = ''
  }
}

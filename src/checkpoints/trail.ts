import type { Cursor } from '../core/cursor.js'
import { rowFingerprint, type Checkpointable, type TranslatorCheckpoints } from './store.js'

/**
 * Leaves checkpoints behind a translator as a stream's items go through it, in order: call
 * {@link before} before an item is translated and {@link after} once it was. A row is final
 * (a checkpoint may follow it) once a later row comes. `from`: where the items start; an item
 * inside the row `from` falls in (the rest of a text row) is not a whole row: no checkpoint
 * follows it. `live`: the items come from a live reader, whose text items may be pieces of a
 * row that grew (no checkpoint follows those either).
 */
export class CheckpointTrail<S> {
  #previous: { seq: number; item: { t: string } } | null = null

  constructor(
    readonly checkpoints: TranslatorCheckpoints<S>,
    readonly key: string,
    readonly translator: Checkpointable<S>,
    readonly from?: Cursor,
    readonly live = false
  ) {}

  /** The translator has taken every item before the one at `at`. */
  before(at: Cursor) {
    const previous = this.#previous
    if (!previous || at.seq <= previous.seq) return
    if (!this.checkpoints.due(this.key, previous.seq)) return
    this.checkpoints.save(this.key, previous.seq, rowFingerprint(previous.item), this.translator)
  }

  /** The translator took `item` (at `at`). */
  after(item: { t: string }, at: Cursor) {
    const partial =
      (this.live && item.t === 'text') ||
      (this.from?.offset !== undefined && at.seq === this.from.seq)
    this.#previous = partial ? null : { seq: at.seq, item }
  }
}

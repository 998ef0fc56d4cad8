import { DEFAULTS } from '../../defaults.js'
import type { FrameTranslator, TranslatorCheckpoint } from '../translate/index.js'

/** One stream's checkpoints, by the whole row they follow, ascending. */
interface Stream {
  seqs: number[]
  states: TranslatorCheckpoint[]
}

/**
 * The translator's state at points of the streams this replica translated (in memory), so a
 * re-attach to an AG-UI run replays only what follows the nearest checkpoint before its cursor,
 * not the whole stream: its cost no longer grows with the run's length.
 *
 * A checkpoint is taken only at a row that is final (a later row exists: a text row grows in
 * place only while it is the last), keyed by the stream and the translator's options (they
 * change what it keeps). Stored rows never change, so a checkpoint stays true; a purged stream's
 * are dropped with the least recently used. Bounded: `streams` streams, `perStream` each (past
 * it every other one goes, so the spacing doubles).
 */
export class TranslatorCheckpoints {
  #streams = new Map<string, Stream>()

  constructor(
    readonly every: number = DEFAULTS.checkpointEvery,
    readonly streams: number = DEFAULTS.checkpointStreams,
    readonly perStream: number = DEFAULTS.checkpointsPerStream
  ) {}

  /** The cache key of a translator: its stream and the options that shape its state. */
  static keyOf(translator: FrameTranslator) {
    const { streamRunId, ...rest } = translator.options
    return `${streamRunId}\n${JSON.stringify(rest)}`
  }

  /** The nearest checkpoint at or before row `seq`, or `null`. */
  nearest(key: string, seq: number): { seq: number; state: TranslatorCheckpoint } | null {
    const stream = this.#streams.get(key)
    if (!stream) return null
    // Recently used streams go last: the first entry is the one to evict.
    this.#streams.delete(key)
    this.#streams.set(key, stream)
    let found = -1
    for (let i = stream.seqs.length - 1; i >= 0; i--) {
      if (stream.seqs[i] <= seq) {
        found = i
        break
      }
    }
    return found === -1 ? null : { seq: stream.seqs[found], state: stream.states[found] }
  }

  /**
   * Whether a translator that has translated every row up to `seq` (and knows a later row
   * exists) should leave a checkpoint there: `every` rows past the last one.
   */
  due(key: string, seq: number) {
    const stream = this.#streams.get(key)
    const last = stream?.seqs.at(-1) ?? 0
    return seq - last >= this.every
  }

  /** Keep `translator`'s state after row `seq` (a final row). */
  save(key: string, seq: number, translator: FrameTranslator) {
    let stream = this.#streams.get(key)
    if (!stream) {
      if (this.#streams.size >= this.streams) {
        this.#streams.delete(this.#streams.keys().next().value!)
      }
      stream = { seqs: [], states: [] }
      this.#streams.set(key, stream)
    }
    if (seq <= (stream.seqs.at(-1) ?? 0)) return
    stream.seqs.push(seq)
    stream.states.push(translator.checkpoint())
    if (stream.seqs.length > this.perStream) {
      stream.seqs = stream.seqs.filter((_, i) => i % 2 === 1)
      stream.states = stream.states.filter((_, i) => i % 2 === 1)
    }
  }
}

import { jsonLength } from '../core/json_length.js'
import { DEFAULTS } from '../defaults.js'
import { OversizeWarnings } from './oversize.js'
import type { StoredCheckpoints } from './stored.js'

/**
 * A translator whose state can be kept and taken up again: what {@link TranslatorCheckpoints}
 * keeps for either door. `checkpoint()` shares nothing with the translator (a later push leaves
 * it as it was); `restore(state)` continues as if the frames before it had been pushed here, and
 * copies it (the kept state stays as it was: it is restored again and again).
 */
export interface Checkpointable<S> {
  checkpoint(): S
  restore(state: S): void
}

/** One stream's checkpoints, by the whole row they follow, ascending. */
interface Stream<S> {
  seqs: number[]
  states: S[]
  /** The fingerprint of the row each follows ({@link rowFingerprint}). */
  rows: string[]
  /** Each state's size ({@link stateBytes}), and their sum. */
  sizes: number[]
  bytes: number
}

/**
 * What a kept state weighs: about the length of its JSON (`jsonLength`, Maps and Sets as the
 * arrays of what they hold: an estimate of the memory it holds; a translator's state can grow
 * with its run, a useChat turn's with its tool calls), counted without writing the JSON (a first
 * replay keeps a checkpoint every `every` rows).
 */
function stateBytes(state: unknown) {
  if (typeof state === 'string') return Buffer.byteLength(state, 'utf8')
  return jsonLength(state)
}

/** A checkpoint found: the row it follows, the state, and that row's fingerprint. */
export interface FoundCheckpoint<S> {
  seq: number
  state: S
  row: string
}

/**
 * What a checkpoint remembers of the row it follows, to tell that the stored row is still that
 * one before it is served from (`from_checkpoint.ts`): the item the replay yielded for the row, its
 * cursor and content (whether a component was superseded since does not count: a translator
 * translates it the same either way). A 32-bit FNV-1a hash of that JSON plus its length.
 */
export function rowFingerprint(item: object): string {
  const json = JSON.stringify({ ...item, superseded: undefined })
  let hash = 0x811c9dc5
  for (let i = 0; i < json.length; i++) {
    hash ^= json.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return `${json.length}:${(hash >>> 0).toString(16)}`
}

/**
 * The cache key of a translator's checkpoints: its stream, the stream's incarnation (its row's
 * `createdAt`, when known: a stream purged and opened again under the same id is another
 * stream) and the options that shape the translator's state (JSON).
 */
export function checkpointKey(
  streamRunId: string,
  incarnation: number | undefined,
  options: object
) {
  return `${streamRunId}\n${incarnation ?? ''}\n${JSON.stringify(options)}`
}

/**
 * A translator's state at points of the streams this replica translated (in memory), so a
 * re-attach replays only what follows the nearest checkpoint before its cursor, not the whole
 * stream: its cost no longer grows with the run's length. One per door (each door's translator
 * has its own state shape `S`); the rules are the same for both:
 *
 * A checkpoint is taken only at a row that is final (a later row exists: a text row grows in
 * place only while it is the last; `trail.ts`), keyed by {@link checkpointKey}. Each remembers
 * the row it follows ({@link rowFingerprint}); one whose row no longer matches the stored one is
 * discarded with every checkpoint of its stream, never served (`from_checkpoint.ts`). A purged stream's
 * are dropped with the least recently used. Bounded: `streams` streams, `perStream` each (past
 * it every other one goes, so the spacing doubles), and `maxBytes` in all (UTF-8 bytes of the
 * states' JSON: past it the least recently used streams go, then the stream just saved to thins
 * out; a state larger than `maxBytes` is not kept).
 *
 * With {@link stored} (the door sets it), a checkpoint that crosses a multiple of its `every`
 * rows is also stored in the database, in the background: any replica then re-attaches near.
 */
export class TranslatorCheckpoints<S> {
  #streams = new Map<string, Stream<S>>()
  #bytes = 0
  /** The door's stored checkpoints (`stored.ts`), when it keeps them. */
  stored: StoredCheckpoints<S> | null = null
  /**
   * Told when a state is over `maxBytes` (not kept): once per stream key, so a state past the
   * bound is never dropped silently (the door sets the sink's `onError`).
   */
  onError: ((error: unknown) => void) | undefined = undefined
  #warned = new OversizeWarnings()

  constructor(
    readonly every: number = DEFAULTS.checkpointEvery,
    readonly streams: number = DEFAULTS.checkpointStreams,
    readonly perStream: number = DEFAULTS.checkpointsPerStream,
    readonly maxBytes: number = DEFAULTS.checkpointBytes
  ) {}

  /** What the kept states weigh in all (see `maxBytes`), in bytes. */
  get bytes() {
    return this.#bytes
  }

  /** The nearest checkpoint at or before row `seq`, or `null`. */
  nearest(key: string, seq: number): FoundCheckpoint<S> | null {
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
    if (found === -1) return null
    return { seq: stream.seqs[found], state: stream.states[found], row: stream.rows[found] }
  }

  /** Forget every checkpoint of a stream (one of them did not match the stored rows). */
  discard(key: string) {
    const stream = this.#streams.get(key)
    if (!stream) return
    this.#bytes -= stream.bytes
    this.#streams.delete(key)
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

  /** Keep `translator`'s state after row `seq` (a final row), whose fingerprint is `row`. */
  save(key: string, seq: number, row: string, translator: Checkpointable<S>) {
    const last = this.#streams.get(key)?.seqs.at(-1) ?? 0
    if (seq <= last) return
    const state = translator.checkpoint()
    if (!this.keep(key, seq, row, state)) return
    if (this.stored?.crosses(last, seq)) this.stored.offer(key, seq, row, state)
  }

  /**
   * Keep `state` after row `seq` (fingerprint `row`; a stored checkpoint read back, or a
   * translator's), in its place among the stream's. Returns whether it was kept.
   */
  keep(key: string, seq: number, row: string, state: S): boolean {
    let stream = this.#streams.get(key)
    if (stream?.seqs.includes(seq)) return false
    const size = stateBytes(state)
    if (size > this.maxBytes) {
      this.#warned.warn(this.onError, key, 'in memory', size, this.maxBytes)
      return false
    }
    if (!stream) {
      if (this.#streams.size >= this.streams) this.discard(this.#streams.keys().next().value!)
      stream = { seqs: [], states: [], rows: [], sizes: [], bytes: 0 }
      this.#streams.set(key, stream)
    }
    let at = stream.seqs.length
    while (at > 0 && stream.seqs[at - 1] > seq) at--
    stream.seqs.splice(at, 0, seq)
    stream.states.splice(at, 0, state)
    stream.rows.splice(at, 0, row)
    stream.sizes.splice(at, 0, size)
    stream.bytes += size
    this.#bytes += size
    if (stream.seqs.length > this.perStream) this.#thin(stream)
    // Over the budget: the least recently used streams go first, then this one thins out.
    for (const other of [...this.#streams.keys()]) {
      if (this.#bytes <= this.maxBytes) return true
      if (other !== key) this.discard(other)
    }
    while (this.#bytes > this.maxBytes && stream.seqs.length > 1) this.#thin(stream)
    return true
  }

  /** Keep every other checkpoint of a stream, the newest among them (its spacing doubles). */
  #thin(stream: Stream<S>) {
    const last = stream.seqs.length - 1
    const keeps = (_: unknown, i: number) => (last - i) % 2 === 0
    const kept = stream.sizes.filter(keeps).reduce((sum, size) => sum + size, 0)
    this.#bytes -= stream.bytes - kept
    stream.bytes = kept
    stream.seqs = stream.seqs.filter(keeps)
    stream.states = stream.states.filter(keeps)
    stream.rows = stream.rows.filter(keeps)
    stream.sizes = stream.sizes.filter(keeps)
  }
}

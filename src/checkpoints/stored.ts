import { createHash } from 'node:crypto'
import { DEFAULTS } from '../defaults.js'
import { OversizeWarnings } from './oversize.js'

/**
 * The version of the translators' state shapes, in every stored checkpoint's key: bump it when
 * a door's translator state changes shape, and the checkpoints stored before are never read.
 */
export const CHECKPOINT_FORMAT = 3

/** The parts of a `checkpointKey` (store.ts): the stream, its incarnation, the options' JSON. */
export function parseCheckpointKey(key: string) {
  const first = key.indexOf('\n')
  const second = key.indexOf('\n', first + 1)
  const incarnation = key.slice(first + 1, second)
  return {
    streamRunId: key.slice(0, first),
    incarnation: incarnation === '' ? undefined : Number(incarnation),
    options: key.slice(second + 1),
  }
}

/**
 * Writes of one key waiting behind the one in flight, at most (a checkpoint past it is skipped,
 * told through `onError`: `checkpoint_queue_full`).
 */
export const QUEUED = 16

/** A stored checkpoint as the table holds it (`src/store/checkpoint_rows.ts` implements the rows). */
export interface StoredCheckpointRow {
  seq: number
  row: string
  state: string
}

/** Where stored checkpoints live (`CheckpointRows`, on the sink's database). Methods may throw. */
export interface CheckpointRowStore {
  nearest(
    runId: string,
    key: string,
    incarnation: number,
    seq: number
  ): Promise<StoredCheckpointRow | null>
  save(
    runId: string,
    key: string,
    incarnation: number,
    checkpoint: StoredCheckpointRow
  ): Promise<void>
  discard(runId: string, key: string): Promise<void>
  /** Whether an error of the methods above means the table does not exist. */
  isMissingTable(error: unknown): boolean
}

/**
 * A door's translator state as text and back: `decode(encode(state))` must translate every
 * following frame exactly as `state` does (a property test per door proves it).
 */
export interface StateCodec<S> {
  encode(state: S): string
  decode(text: string): S
}

/** Options of {@link StoredCheckpoints}. */
export interface StoredCheckpointOptions {
  /** Store a checkpoint each time the in-memory ones cross a multiple of this many rows. */
  every?: number
  /** States above this many UTF-8 bytes are not stored (told through `onError`, once a stream). */
  maxBytes?: number
  /**
   * Told once when the table turns out not to exist (stored checkpoints then stay off), once
   * per stream whose state is over `maxBytes` (that checkpoint is not stored:
   * `checkpoint_oversize`), and once per stream with a checkpoint skipped because
   * {@link QUEUED} writes of it already wait (`checkpoint_queue_full`).
   */
  onError?: (error: unknown) => void
}

/**
 * A door's translator checkpoints in the database, next to the in-memory ones
 * ({@link TranslatorCheckpoints} offers them every `every` rows): a replica that never served a
 * stream re-attaches from the nearest stored one instead of the stream's start.
 *
 * Nothing here slows or breaks serving: writes go in the background (never awaited by a
 * request; one at a time per key, a few waiting at most), every
 * failure is swallowed, and a missing table (a schema migrated before it) turns them off for
 * the process after its first error, with one warning through `onError`. A stored row's key is
 * a SHA-256 of the door, {@link CHECKPOINT_FORMAT} and the options that shape the state; its
 * stream and incarnation are columns of their own.
 */
export class StoredCheckpoints<S> {
  readonly every: number
  readonly maxBytes: number
  #off = false
  #writes = new Map<string, { done: Promise<void>; waiting: number }>()
  #hashes = new Map<string, string>()
  #warned = new OversizeWarnings()

  constructor(
    readonly rows: CheckpointRowStore,
    readonly codec: StateCodec<S>,
    /** The door's name (part of the stored key). */
    readonly door: string,
    readonly options: StoredCheckpointOptions = {}
  ) {
    this.every = options.every ?? DEFAULTS.storedCheckpointEvery
    this.maxBytes = options.maxBytes ?? DEFAULTS.storedCheckpointBytes
  }

  /** Whether stored checkpoints are in use (not turned off by a missing table). */
  get on() {
    return !this.#off && this.every > 0
  }

  /** Whether a checkpoint at `seq`, the one before it at `last`, crosses a multiple of `every`. */
  crosses(last: number, seq: number) {
    return this.on && Math.floor(seq / this.every) > Math.floor(last / this.every)
  }

  /** The stored nearest at or before row `seq` of the in-memory key `key`, or `null` (never throws). */
  async nearest(key: string, seq: number): Promise<{ seq: number; state: S; row: string } | null> {
    const ref = this.on ? this.#ref(key) : null
    if (!ref) return null
    try {
      const found = await this.rows.nearest(ref.runId, ref.hash, ref.incarnation, seq)
      if (!found) return null
      return { seq: found.seq, row: found.row, state: this.codec.decode(found.state) }
    } catch (error) {
      this.#failed(error)
      return null
    }
  }

  /**
   * Store `state` after row `seq` (fingerprint `row`), in the background, after the key's
   * writes in flight (one at a time per key; past {@link QUEUED} waiting, it is skipped, and
   * `onError` told once per key: `checkpoint_queue_full`).
   */
  offer(key: string, seq: number, row: string, state: S) {
    const ref = this.on ? this.#ref(key) : null
    if (!ref) return
    if ((this.#writes.get(key)?.waiting ?? 0) >= QUEUED) {
      this.#warned.queueFull(this.options.onError, key, seq, QUEUED)
      return
    }
    let text: string
    try {
      text = this.codec.encode(state)
    } catch {
      return
    }
    const size = Buffer.byteLength(text, 'utf8')
    if (size > this.maxBytes) {
      this.#warned.warn(this.options.onError, key, 'stored', size, this.maxBytes)
      return
    }
    this.#queue(key, () =>
      this.rows.save(ref.runId, ref.hash, ref.incarnation, { seq, row, state: text })
    )
  }

  /** Delete the stored checkpoints of `key`, in the background (after its writes in flight). */
  discard(key: string) {
    const ref = this.on ? this.#ref(key) : null
    if (ref) this.#queue(key, () => this.rows.discard(ref.runId, ref.hash))
  }

  /** Resolves once no write is in flight (tests, the benchmark). */
  async settled() {
    while (this.#writes.size > 0) await Promise.all([...this.#writes.values()].map((w) => w.done))
  }

  /** Run `write` after the key's writes in flight; its failure is swallowed ({@link #failed}). */
  #queue(key: string, write: () => Promise<void>) {
    const before = this.#writes.get(key)
    const entry = { done: Promise.resolve(), waiting: (before?.waiting ?? 0) + 1 }
    entry.done = (before?.done ?? Promise.resolve())
      .then(() => {
        entry.waiting = 0
        return this.on ? write() : undefined
      })
      .catch((error) => this.#failed(error))
      .finally(() => {
        if (this.#writes.get(key) === entry) this.#writes.delete(key)
      })
    this.#writes.set(key, entry)
  }

  /** The stored row's stream, incarnation and key; `null` without an incarnation. */
  #ref(key: string) {
    const { streamRunId, incarnation, options } = parseCheckpointKey(key)
    if (incarnation === undefined) return null
    let hash = this.#hashes.get(options)
    if (hash === undefined) {
      hash = createHash('sha256')
        .update(`${this.door}\n${CHECKPOINT_FORMAT}\n${options}`)
        .digest('hex')
      if (this.#hashes.size >= 64) this.#hashes.clear()
      this.#hashes.set(options, hash)
    }
    return { runId: streamRunId, incarnation, hash }
  }

  /** A failure is swallowed; a missing table turns stored checkpoints off (one warning). */
  #failed(error: unknown) {
    if (this.#off || !this.rows.isMissingTable(error)) return
    this.#off = true
    this.options.onError?.(
      new Error(
        'agent-stream: the translator checkpoints table does not exist (run the package migrations); ' +
          're-attach uses in-memory checkpoints only until this process restarts',
        { cause: error }
      )
    )
  }
}

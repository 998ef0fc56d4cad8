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
 * Checkpoints of one key waiting to be stored, at most (a checkpoint past it is skipped, told
 * through `onError`: `checkpoint_queue_full`). Those waiting behind a write in flight are stored
 * together, in one statement, when it is done.
 */
export const QUEUED = 64

/** Reads started ahead ({@link StoredCheckpoints.prefetch}) held at most. */
const PREFETCHED = 64

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
  /** Store checkpoints (in one statement); one already stored at its seq stays as it is. */
  save(
    runId: string,
    key: string,
    incarnation: number,
    checkpoints: StoredCheckpointRow[]
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

/** Where a key's checkpoints are stored: the stream, its incarnation, the hashed key. */
interface StoredRef {
  runId: string
  incarnation: number
  hash: string
}

/** A key's writes not done yet, in order (the first may be in flight), and the rows waiting. */
interface KeyWrites {
  ops: ({ rows: StoredCheckpointRow[] } | { discard: true })[]
  waiting: number
  done: Promise<void>
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
 * request; one write at a time per key, the checkpoints offered meanwhile stored together by
 * the next, {@link QUEUED} waiting at most), every failure is swallowed, and a missing table (a schema migrated before it) turns them off for
 * the process after its first error, with one warning through `onError`. A stored row's key is
 * a SHA-256 of the door, {@link CHECKPOINT_FORMAT} and the options that shape the state; its
 * stream and incarnation are columns of their own.
 */
export class StoredCheckpoints<S> {
  readonly every: number
  readonly maxBytes: number
  #off = false
  #writes = new Map<string, KeyWrites>()
  /** Reads started by {@link prefetch}, by seq and key. */
  #prefetched = new Map<string, Promise<{ seq: number; state: S; row: string } | null>>()
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

  /**
   * Start reading the stored nearest at or before row `seq` of `key` now, for a
   * {@link nearest} of the same key and seq soon after (a re-attach reads it while it reads
   * other things: one round trip fewer before its first event). A few at most are held; one
   * not asked for is dropped with the oldest.
   */
  prefetch(key: string, seq: number) {
    if (!this.on) return
    const at = `${seq}\n${key}`
    if (this.#prefetched.has(at)) return
    if (this.#prefetched.size >= PREFETCHED) {
      this.#prefetched.delete(this.#prefetched.keys().next().value!)
    }
    this.#prefetched.set(at, this.#read(key, seq))
  }

  /** The stored nearest at or before row `seq` of the in-memory key `key`, or `null` (never throws). */
  nearest(key: string, seq: number): Promise<{ seq: number; state: S; row: string } | null> {
    const at = `${seq}\n${key}`
    const prefetched = this.#prefetched.get(at)
    if (prefetched) {
      this.#prefetched.delete(at)
      return prefetched
    }
    return this.#read(key, seq)
  }

  async #read(key: string, seq: number): Promise<{ seq: number; state: S; row: string } | null> {
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
   * write in flight (those offered meanwhile go together in the next; past {@link QUEUED}
   * waiting, it is skipped, and `onError` told once per key: `checkpoint_queue_full`).
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
    const writes = this.#writesOf(key, ref)
    const last = writes.ops.at(-1)
    if (last && 'rows' in last) last.rows.push({ seq, row, state: text })
    else writes.ops.push({ rows: [{ seq, row, state: text }] })
    writes.waiting++
  }

  /** Delete the stored checkpoints of `key`, in the background (after its writes in flight). */
  discard(key: string) {
    const ref = this.on ? this.#ref(key) : null
    if (ref) this.#writesOf(key, ref).ops.push({ discard: true })
  }

  /** Resolves once no write is in flight (tests, the benchmark). */
  async settled() {
    while (this.#writes.size > 0) await Promise.all([...this.#writes.values()].map((w) => w.done))
  }

  /** The key's queue, its writer started when new. */
  #writesOf(key: string, ref: StoredRef): KeyWrites {
    let writes = this.#writes.get(key)
    if (!writes) {
      writes = { ops: [], waiting: 0, done: Promise.resolve() }
      this.#writes.set(key, writes)
      writes.done = this.#drain(key, ref, writes)
    }
    return writes
  }

  /**
   * Run the key's writes in order, one at a time: the checkpoints offered while one is in
   * flight go together in the next (one statement). Failures are swallowed ({@link #failed}).
   */
  async #drain(key: string, ref: StoredRef, writes: KeyWrites) {
    // What this turn offers goes in the first write.
    await Promise.resolve()
    for (let op = writes.ops.shift(); op; op = writes.ops.shift()) {
      if ('rows' in op) writes.waiting -= op.rows.length
      if (!this.on) continue
      try {
        if ('rows' in op) await this.rows.save(ref.runId, ref.hash, ref.incarnation, op.rows)
        else await this.rows.discard(ref.runId, ref.hash)
      } catch (error) {
        this.#failed(error)
      }
    }
    this.#writes.delete(key)
  }

  /** The stored row's stream, incarnation and key; `null` without an incarnation. */
  #ref(key: string): StoredRef | null {
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

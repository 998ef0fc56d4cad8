import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { StreamFrame } from '../core/frames.js'
import type { NewRow, StoredRow } from './rows.js'

/**
 * Text a writer held back to coalesce, and the row it grows: `seq` is the writer's own text row
 * (`prefix` its whole body so far), grown in place when it is still the stream's last row;
 * otherwise (or with `seq` null) the text goes into a new row.
 */
export interface HeldText {
  seq: number | null
  prefix: string
  text: string
}

/** A row about to be inserted, its seq allocated (what {@link AppendPlan.stamp} may set). */
export type NumberedRow = NewRow & { seq: number }

/**
 * One append to a stream, in one transaction: the sink's one write plan, the same object from
 * `LucidTokenStreamSink.append` and the writer (`src/sink/append.ts`) down to the SQL
 * (`commitInTransaction`, or a group's `commitGroupInTransaction`). Held text, then `frames`,
 * then the end marker when `end`; all or nothing.
 */
export interface AppendPlan {
  /** Frames to store, in order (validated first, unless `validated`: one invalid, nothing stored). */
  frames: StreamFrame[]
  /** A writer's held text and the text row it grows. */
  text?: HeldText
  /** End the segment after the frames: `ended` (`SinkWriter.end()`) or `failed` (a dead writer). */
  end?: 'ended' | 'failed'
  /**
   * Runs inside the transaction once the stream row is locked and the rows' seqs are allocated,
   * before they are inserted: it may set a row's `body` to what only this commit knows (the park
   * an approval joined), so every row is written once, with its final content. Throwing rolls
   * the whole append back.
   */
  stamp?: (trx: TransactionClientContract, rows: NumberedRow[]) => Promise<void>
  /**
   * Runs inside the transaction once the rows are inserted (parking rows, decisions), with the
   * rows as stored (seqs allocated). Throwing rolls the whole append back.
   */
  within?: (trx: TransactionClientContract, rows: StoredRow[]) => Promise<void>
  /** Only append when the writer's lease has lapsed (fails a dead writer's stream exactly once). */
  onlyIfLeaseLapsed?: boolean
  /**
   * Also append to a stream that ended or failed (a settlement written after a run parked): its
   * status stays, and an end marker closes what was appended so readers still end.
   */
  evenIfClosed?: boolean
  /** Renew the writer's lease to now + this many milliseconds (not when `end`). */
  leaseMs?: number
  /**
   * The writer's epoch (`writer_epoch`, as its open or takeover left it): the append is refused
   * with `LeaseLostError` once another replica took the stream over (fencing). Absent: any.
   */
  epoch?: number
  /**
   * Take a dead writer's stream over: only when the stream is open, its lease lapsed (with
   * `onlyIfLeaseLapsed`) and it records a running segment; the writer epoch moves on, so the old
   * writer's appends are refused. The first claimer wins: the others get `null`.
   */
  takeOver?: boolean
  /** The frames were validated when written (a writer must, to coalesce text). */
  validated?: boolean
  /**
   * The leading edge of a message: its first text, committed at once, never waiting for a group
   * of commits in flight (alone then; else in the next turn's group): time to first token is
   * what a person feels; what follows is coalesced and grouped.
   */
  leading?: boolean
  /**
   * The writer's name for this append (at most 64 characters, unique per append), stored on every
   * row it writes. The same token on every attempt of one append.
   */
  token?: string
  /**
   * An earlier attempt with this `token` failed with its outcome unknown: first look (under the
   * stream row's lock) for rows with the token; when there are, that attempt landed and they
   * are returned as its result, nothing is written again and neither `stamp` nor `within` runs.
   */
  retried?: boolean
  /** Lowest seq an earlier attempt can have written (narrows the look-up; default 1). */
  sinceSeq?: number
}

/** What an append wrote, in seq order. */
export interface CommitResult {
  /** The stream's last seq before this commit. */
  before: number
  /** The stream's `rev` after this commit. */
  rev: number
  /** The text row that grew in place, with its length before and its whole body after. */
  grown?: { seq: number; from: number; body: string }
  /** Rows inserted, with their seqs. */
  rows: StoredRow[]
  /** The writer epoch after a `takeOver`. */
  epoch?: number
  /** A retried commit found its earlier attempt had landed (`rev` is then unknown: -1). */
  landed?: boolean
}

/** The row a (validated) frame is stored as: a text row holds its text, any other its JSON. */
export function frameRow(frame: StreamFrame): NewRow {
  return {
    kind: frame.t,
    body: frame.t === 'text' ? frame.v : JSON.stringify(frame),
    componentId: frame.t === 'component' ? (frame.id ?? null) : null,
  }
}

/** The rows a plan inserts after its held text: its frames', then the end marker when `end`. */
export function planRows(plan: AppendPlan): NewRow[] {
  const rows = plan.frames.map(frameRow)
  if (plan.end) rows.push({ kind: 'end', body: '' })
  return rows
}

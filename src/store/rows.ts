import type { TransactionClientContract } from '@adonisjs/lucid/types/database'

/** The body of an end marker that follows frames appended to an ended stream (no segment end). */
export const APPENDED_END = 'appended'

/** What a frames row holds. `end` marks a segment's end (`SinkWriter.end()`); it is never yielded. */
export type RowKind = 'text' | 'component' | 'event' | 'error' | 'elicitation' | 'approval' | 'end'

export type StreamStatus = 'open' | 'ended' | 'failed'

/** One stored row, as read back. */
export interface StoredRow {
  seq: number
  kind: RowKind
  /** Raw text for a `text` row; JSON for the others; `''` for `end`. */
  body: string
  componentId: string | null
  superseded: boolean
  /**
   * When the row was inserted (epoch milliseconds; a coalesced text row: its first text), when
   * the read brought it (`StreamStore.page`): for tools that place rows in time (the timeline).
   */
  createdAt?: number
}

/** A row to insert; the store allocates its seq. */
export interface NewRow {
  kind: RowKind
  body: string
  componentId?: string | null
}

/** The stream's head as its row says: enough to tell "anything new?" without reading frames. */
export interface StreamHead {
  lastSeq: number
  rev: number
  status: StreamStatus
  /** Epoch milliseconds; `null` when no writer holds the stream. */
  leaseExpiresAt: number | null
}

/**
 * One write transaction's plan: text held back by a writer and the rows that follow it.
 * `text.seq` is the writer's own text row, grown in place when it is still the stream's last
 * row; otherwise the text goes into a new row.
 */
export interface CommitPlan {
  text?: { seq: number | null; prefix: string; text: string }
  rows: NewRow[]
  /** Write the end marker's status: `ended` after `end()`, `failed` for a dead writer. */
  endStatus?: 'ended' | 'failed'
  /** Renew the writer's lease to now + this many milliseconds. */
  leaseMs?: number
  /** Only commit when the lease has lapsed (used to fail a dead writer's stream exactly once). */
  onlyIfLeaseLapsed?: boolean
  /**
   * Also commit to a stream that is ended or failed (a settlement written after a run parked):
   * its status stays, and an end marker closes what was appended so readers still end.
   */
  evenIfClosed?: boolean
  /**
   * Runs inside the transaction, after the stream row is locked and the rows are inserted
   * (parking rows, decisions). Throwing rolls the whole commit back.
   */
  within?: (trx: TransactionClientContract, rows: StoredRow[]) => Promise<void>
  /**
   * The writer's name for this commit (at most 64 characters, unique per commit), stored on every
   * row it writes. The same token on every attempt of one commit.
   */
  token?: string
  /**
   * An earlier attempt with this `token` failed with its outcome unknown: first look (under the
   * stream row's lock) for rows with the token; when there are, that attempt landed and they
   * are returned as its result, nothing is written again and `within` does not run.
   */
  retried?: boolean
  /** Lowest seq an earlier attempt can have written (narrows the look-up; default 1). */
  sinceSeq?: number
}

/** What a commit wrote, in seq order. */
export interface CommitResult {
  /** The stream's last seq before this commit. */
  before: number
  /** The stream's `rev` after this commit. */
  rev: number
  /** The text row that grew in place, with its length before and its whole body after. */
  grown?: { seq: number; from: number; body: string }
  /** Rows inserted, with their seqs. */
  rows: StoredRow[]
  /** A retried commit found its earlier attempt had landed (`rev` is then unknown: -1). */
  landed?: boolean
}

/** A SQL value as a number (drivers return bigints and decimals as strings). */
export const int = (value: unknown) => Number(value)

/** A frames row as a driver returns it. */
export interface RawRow {
  seq: unknown
  kind: RowKind
  body: string
  component_id: string | null
  superseded: unknown
  created_at?: unknown
}

/**
 * A new frames row as inserted (the columns `createStreamTables` defines): row `row` of stream
 * `runId`, written by the commit with token `token` at `at` (epoch milliseconds).
 */
export function frameRecord(
  runId: string,
  row: { seq: number; kind: RowKind; body: string; componentId?: string | null },
  token: string | null | undefined,
  at: number
) {
  return {
    run_id: runId,
    seq: row.seq,
    kind: row.kind,
    body: row.body,
    component_id: row.componentId ?? null,
    superseded: false,
    commit_token: token ?? null,
    created_at: at,
  }
}

/** A frames row as a driver returns it, parsed. */
export function toStoredRow(row: RawRow): StoredRow {
  return {
    seq: int(row.seq),
    kind: row.kind,
    body: row.body,
    componentId: row.component_id,
    superseded: row.superseded === true || row.superseded === 1 || row.superseded === '1',
    ...(row.created_at === undefined || row.created_at === null
      ? {}
      : { createdAt: int(row.created_at) }),
  }
}

/**
 * A stream as the door sees it at one read: its row's head, and `createdAt` (epoch ms) naming
 * this incarnation of the stream (a stream purged and opened again under the same id is another
 * one: what was learnt of the first is never used for the second).
 */
export type StreamState = StreamHead & { createdAt: number }

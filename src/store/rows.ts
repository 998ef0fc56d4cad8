/** The body of an end marker that follows frames appended to an ended stream (no segment end). */
export const APPENDED_END = 'appended'

/**
 * What a frames row holds. `end` marks a segment's end (`SinkWriter.end()`); it is never yielded.
 * `data` is one append of a Durable Streams stream created through the write path (its messages
 * as a JSON array, or its bytes as base64): no frame, never yielded by the sink.
 */
export type RowKind =
  'text' | 'component' | 'event' | 'error' | 'elicitation' | 'approval' | 'end' | 'data'

/** A stream's status: `open`, `ended` (by `end()`) or `failed` (its writer died or lost the run). */
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
   * the read asked for it (`StreamReads.page` with `createdAt`, as `storedRows` does): for tools
   * that place rows in time (the timeline).
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

/**
 * THE decoder of a `streams` row as a driver returns it (bigints and decimals may come as
 * strings): its head and `createdAt`. `prefix` names the columns of a join that aliased them
 * (`s_last_seq`, ... with `'s_'`). Every read of a stream's row parses it here.
 */
export function toStreamState(row: Record<string, unknown>, prefix = ''): StreamState {
  const lease = row[`${prefix}lease_expires_at`]
  return {
    lastSeq: int(row[`${prefix}last_seq`]),
    rev: int(row[`${prefix}rev`]),
    status: row[`${prefix}status`] as StreamStatus,
    leaseExpiresAt: lease === null || lease === undefined ? null : int(lease),
    createdAt: int(row[`${prefix}created_at`]),
  }
}

import { isDeepStrictEqual } from 'node:util'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  compareWritesSortKeys,
  writesSortKey,
  type CheckpointPendingWrite,
} from '@langchain/langgraph-checkpoint'

/**
 * The rows of `LucidSaver` (src/store/langgraph_schema.ts) and the conversions between them and
 * LangGraph's values: bytes in and out of the binary columns, a checkpoint's place, the order of
 * pending writes, the metadata filter.
 */

/** Where a checkpoint lives: its thread and namespace (`''`: the root graph). */
export interface Place {
  threadId: string
  ns: string
}

/** A stored checkpoint, as the checkpoints table holds it. */
export interface CheckpointRow {
  thread_id: string
  checkpoint_ns: string
  checkpoint_id: string
  parent_checkpoint_id: string | null
  type: string
  checkpoint: unknown
  metadata_type: string
  metadata: unknown
}

/** A stored write, as the writes table holds it. */
export interface WriteRow {
  task_id: string
  idx: number | string
  channel: string
  task_path: string | null
  type: string
  blob: unknown
}

/** The serde's bytes as a driver binds them (a Buffer on the same memory, no copy). */
export function toColumn(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * A binary column as the serde reads it: a copy of the driver's bytes (pg, mysql2 and
 * better-sqlite3 all return a Buffer; a string passes through as the serde accepts it).
 */
export function fromColumn(value: unknown): Uint8Array | string {
  if (typeof value === 'string') return value
  if (value instanceof Uint8Array) return new Uint8Array(value)
  throw new TypeError('LucidSaver: a stored value is not binary')
}

/** The longest id each column keeps (src/store/langgraph_schema.ts). */
const ID_COLUMNS = {
  thread_id: 191,
  checkpoint_ns: 191,
  checkpoint_id: 64,
  channel: 191,
  task_id: 191,
  version: 64,
} as const

/**
 * Refuse an id longer than its column before writing it (MySQL's `INSERT IGNORE` would store
 * it cut short instead of failing), or one that is not a string or number.
 */
export function checkId(column: keyof typeof ID_COLUMNS, value: unknown): string {
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new TypeError(`LucidSaver: "${column}" must be a string`)
  }
  const id = String(value)
  if (id.length > ID_COLUMNS[column]) {
    throw new RangeError(`LucidSaver: "${column}" is longer than ${ID_COLUMNS[column]} characters`)
  }
  return id
}

/** The config LangGraph addresses one checkpoint by. */
export function checkpointConfig(place: Place, checkpointId: string): RunnableConfig {
  return {
    configurable: {
      thread_id: place.threadId,
      checkpoint_ns: place.ns,
      checkpoint_id: checkpointId,
    },
  }
}

/** The pending writes of one checkpoint in the order live execution applies them (`writesSortKey`). */
export function sortWrites(rows: WriteRow[]): WriteRow[] {
  return rows
    .map((row) => ({ row, key: writesSortKey(row.task_path ?? '', row.task_id, Number(row.idx)) }))
    .sort((a, b) => compareWritesSortKeys(a.key, b.key))
    .map(({ row }) => row)
}

/** A pending write as LangGraph hands it back. */
export function pendingWrite(row: WriteRow, value: unknown): CheckpointPendingWrite {
  return [row.task_id, row.channel, value]
}

/**
 * Whether metadata matches `list`'s filter: every key of the filter is in the metadata with an
 * equal (deeply, strictly equal) JSON value. An empty filter matches everything.
 */
export function matchesFilter(
  metadata: Record<string, unknown> | undefined,
  filter: Record<string, unknown>
): boolean {
  return Object.entries(filter).every(([key, value]) => isDeepStrictEqual(metadata?.[key], value))
}

/** Whether a filter filters anything. */
export function hasFilter(
  filter: Record<string, unknown> | undefined
): filter is Record<string, unknown> {
  return filter !== undefined && Object.keys(filter).length > 0
}

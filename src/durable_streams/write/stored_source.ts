import type { Cursor } from '../../core/cursor.js'
import type { DurableRecord, DurableStore } from '../../store/durable_store.js'
import type { DurableSource, SourceBatch, SourceHead } from '../source.js'
import { H } from '../read/headers.js'
import { isJsonType } from './rules.js'
import { waitForChange, type ChangeSource } from './waits.js'

/** Appends read per query. */
const PAGE = 100

/**
 * A stream created through the write path as a `DurableSource` (what the read path serves):
 * one batch per append (its messages, or its bytes from base64), positions `{ seq }` after
 * append `seq`; live reads wait for the next commit through the sink's notifiers (`waits.ts`).
 */
export function storedSource(
  store: DurableStore,
  record: DurableRecord,
  changes: ChangeSource
): DurableSource {
  const json = isJsonType(record.contentType)
  const batchOf = (body: string, seq: number): SourceBatch =>
    json
      ? { messages: JSON.parse(body) as unknown[], next: { seq } }
      : { bytes: new Uint8Array(Buffer.from(body, 'base64')), next: { seq } }

  async function current(): Promise<DurableRecord | null> {
    return store.find(record.runId)
  }

  return {
    contentType: record.contentType,
    json,
    async head(): Promise<SourceHead> {
      const now = (await current()) ?? record
      return { tail: { seq: now.lastSeq }, closed: now.closed }
    },
    async has(cursor: Cursor) {
      return cursor.offset === undefined && cursor.seq >= 0 && cursor.seq <= record.lastSeq
    },
    headers() {
      const headers: Record<string, string> = {}
      if (record.ttlSeconds !== null) headers[H.ttl] = String(record.ttlSeconds)
      if (record.expiresAtText !== null) headers[H.expiresAt] = record.expiresAtText
      return headers
    },
    async touch() {
      if (record.ttlSeconds !== null) await store.touch(record.runId, record.ttlSeconds)
    },
    async *batches(after: Cursor, read: { live: boolean; signal?: AbortSignal }) {
      let at = after.seq
      while (!read.signal?.aborted) {
        // The head first: a commit after it is one the wait below hears of.
        const now = await current()
        if (!now) return
        const rows = await store.rows(record.runId, at, PAGE)
        for (const row of rows) {
          const batch = batchOf(row.body, row.seq)
          at = row.seq
          if (now.closed && row.seq === now.lastSeq) batch.closed = true
          yield batch
        }
        if (rows.length === PAGE) continue
        if (at < now.lastSeq) continue
        if (now.closed) {
          if (rows.length === 0) yield { next: { seq: at }, closed: true }
          return
        }
        if (!read.live) return
        await waitForChange(
          changes,
          record.runId,
          now.rev,
          read.signal ?? new AbortController().signal
        )
      }
    },
  }
}

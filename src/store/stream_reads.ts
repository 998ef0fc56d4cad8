import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { DEFAULTS } from '../defaults.js'
import {
  int,
  toStoredRow,
  toStreamState,
  type RawRow,
  type StoredRow,
  type StreamState,
} from './rows.js'

/**
 * The reads of streams, through Lucid: their rows' heads (one stream, or many in one read), and
 * their frames in pages bounded in rows and in UTF-8 bytes (one stream, or several woken
 * together in one read). Never writes; the writes are `StreamStore`'s.
 */
export class StreamReads {
  constructor(
    /** The Lucid client the tables live on (`StreamStore.client`: opened on first use). */
    readonly connect: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  /** The Lucid client the reads run on. */
  get client(): QueryClientContract {
    return this.connect()
  }

  /** The heads of many streams in one read; a stream that does not exist is absent. */
  async heads(runIds: string[]): Promise<Map<string, StreamState>> {
    const heads = new Map<string, StreamState>()
    for (let i = 0; i < runIds.length; i += DEFAULTS.headsBatch) {
      const rows = await this.client
        .from(this.tables.streams)
        .select('run_id', 'last_seq', 'rev', 'status', 'lease_expires_at', 'created_at')
        .whereIn('run_id', runIds.slice(i, i + DEFAULTS.headsBatch))
      for (const row of rows) heads.set(row.run_id, toStreamState(row))
    }
    return heads
  }

  /**
   * A read of frames rows with each row's size (`size`, UTF-8 bytes as SQL counts them) and its
   * body only when at most `small` bytes (else `body` is null: a second read brings the bodies
   * a page keeps), so a read never brings more bodies than it may keep. For {@link page} and
   * {@link pages}, which add the rows to read.
   */
  #sizedRows(small: number, createdAt = false) {
    // (Capped to a 32-bit integer: SQL compares it with a size.)
    const cap = Math.min(Math.floor(small), 2 ** 31 - 1)
    const query = this.client
      .from(this.tables.frames)
      .select('seq', 'kind', 'component_id', 'superseded')
    if (createdAt) query.select('created_at')
    return query
      .select(this.client.knexRawQuery('octet_length(body) as size'))
      .select(
        this.client.knexRawQuery('case when octet_length(body) <= ? then body end as body', [cap])
      )
  }

  /**
   * The stream's revision in the same statement as its rows (`stream_rev`): one snapshot, so
   * the rows read hold every change up to it. For a page of one stream, `runId`; for several,
   * each row's own stream.
   */
  #revColumn(runId?: string) {
    const { streams, frames } = this.tables
    return runId === undefined
      ? this.client.knexRawQuery('(select ?? from ?? where ?? = ??) as stream_rev', [
          `${streams}.rev`,
          streams,
          `${streams}.run_id`,
          `${frames}.run_id`,
        ])
      : this.client.knexRawQuery('(select ?? from ?? where ?? = ?) as stream_rev', [
          `${streams}.rev`,
          streams,
          `${streams}.run_id`,
          runId,
        ])
  }

  /**
   * One page of rows from `fromSeq` (inclusive), in seq order: at most `limit` rows, and no more
   * than `maxBytes` of bodies (UTF-8 bytes, as SQL counts them): a page stops before the row that
   * would take it past `maxBytes`. The first two rows are read whatever their size (a row is at
   * most `maxFrameBytes`), so a page always makes progress past a cursor's own row. `more` says
   * rows may follow (the page stopped at a limit); otherwise the stream had no more. `rev` is
   * the stream's revision as of the rows read (`null` when none was read): with `more` false,
   * the page holds every row of the stream up to it.
   *
   * One read brings every row's size, and the bodies of rows small enough that `limit` of them
   * fit in `maxBytes` (most rows: one query); the bodies of larger rows the page takes come in a
   * second read. So a read never brings more than `maxBytes` of bodies it does not keep.
   *
   * Seqs are gap-free, so the bounded range selects exactly those rows, and keeps every planner
   * on the primary key (an open-ended range on a freshly filled table led PostgreSQL to scan and
   * sort the whole rest of the run).
   */
  async page(
    runId: string,
    fromSeq: number,
    limit: number,
    maxBytes: number,
    /** Each row's `createdAt` too (tools that place rows in time); readers have no use for it. */
    { createdAt = false }: { createdAt?: boolean } = {}
  ): Promise<StreamPage> {
    // Seqs start at 1: from 0 a page would be one row short of `limit` and say no more follow.
    fromSeq = Math.max(1, fromSeq)
    const found: SizedRow[] = await this.#sizedRows(maxBytes / limit, createdAt)
      .select(this.#revColumn(runId))
      .where('run_id', runId)
      .whereBetween('seq', [fromSeq, fromSeq + limit - 1])
      .orderBy('seq', 'asc')
    let taken = 0
    let bytes = 0
    for (const row of found) {
      bytes += int(row.size)
      if (taken >= 2 && bytes > maxBytes) break
      taken++
    }
    const page = found.slice(0, taken)
    const missing = page.filter((row) => row.body === null).map((row) => int(row.seq))
    if (missing.length > 0) {
      const bodies = new Map<number, string>()
      const read = await this.client
        .from(this.tables.frames)
        .select('seq', 'body')
        .where('run_id', runId)
        .whereIn('seq', missing)
      for (const row of read) bodies.set(int(row.seq), row.body)
      for (const row of page) row.body ??= bodies.get(int(row.seq)) ?? null
    }
    // A row deleted in between (a purge): the page stops before it (no gap), and its readers end.
    const kept = untilMissing(page)
    return {
      rows: kept.map((row) => toStoredRow(row as RawRow)),
      more: kept.length < page.length || taken < found.length || found.length === limit,
      rev: revOf(found),
    }
  }

  /**
   * The new rows of several streams in one read (a tail woken for many streams by one commit):
   * for each `{ runId, fromSeq }`, its rows from `fromSeq` (inclusive), at most `limit`, in seq
   * order, as {@link page} reads one stream. The bodies it brings stay within `maxBytes` in all
   * (UTF-8 bytes, as SQL counts them): a stream whose rows would take the read past it is left
   * out (absent from the result: read it with {@link page}, which takes large rows one page at a
   * time). `more` per stream: rows may follow (it reached `limit`).
   *
   * Each stream's range is bounded on both sides (seqs are gap-free), as in {@link page}, so the
   * read stays on the primary key: one index range per stream. One OR term per stream: give it
   * at most `DEFAULTS.tailBatchStreams` streams (SQLite caps an expression's depth at 1000).
   * `rev` per stream, as {@link page} gives it.
   */
  async pages(
    requests: { runId: string; fromSeq: number }[],
    limit: number,
    maxBytes: number
  ): Promise<Map<string, StreamPage>> {
    const out = new Map<string, StreamPage>()
    if (requests.length === 0) return out
    type Found = SizedRow & { run_id: string }
    const found: Found[] = await this.#sizedRows(maxBytes / (limit * requests.length))
      .select('run_id')
      .select(this.#revColumn())
      .where((query) => {
        for (const request of requests) {
          // (From seq 1 at the least, as in `page`.)
          const fromSeq = Math.max(1, request.fromSeq)
          query.orWhere((range) =>
            range.where('run_id', request.runId).whereBetween('seq', [fromSeq, fromSeq + limit - 1])
          )
        }
      })
      .orderBy('seq', 'asc')
    const byStream = new Map<string, Found[]>()
    for (const row of found) {
      const rows = byStream.get(row.run_id)
      if (rows) rows.push(row)
      else byStream.set(row.run_id, [row])
    }
    let bytes = 0
    const taken: [string, Found[]][] = []
    for (const { runId } of requests) {
      const rows = byStream.get(runId) ?? []
      const size = rows.reduce((sum, row) => sum + int(row.size), 0)
      if (bytes + size > maxBytes) continue
      bytes += size
      taken.push([runId, rows])
    }
    // The bodies of larger rows, in a second read: one OR term per stream, as in the first.
    const missing = taken
      .map(([runId, rows]) => [runId, rows.filter((row) => row.body === null)] as const)
      .filter(([, rows]) => rows.length > 0)
    if (missing.length > 0) {
      const bodies = new Map<string, string>()
      const read = await this.client
        .from(this.tables.frames)
        .select('run_id', 'seq', 'body')
        .where((query) => {
          for (const [runId, rows] of missing) {
            const seqs = rows.map((row) => int(row.seq))
            query.orWhere((row) => row.where('run_id', runId).whereIn('seq', seqs))
          }
        })
      for (const row of read) bodies.set(`${row.run_id}\n${int(row.seq)}`, row.body)
      for (const [runId, rows] of missing) {
        for (const row of rows) row.body = bodies.get(`${runId}\n${int(row.seq)}`) ?? null
      }
    }
    for (const [runId, rows] of taken) {
      // A row deleted in between (a purge): the page stops before it (no gap); its readers end.
      const kept = untilMissing(rows)
      out.set(runId, {
        rows: kept.map((row) => toStoredRow(row as RawRow)),
        more: kept.length < rows.length || rows.length === limit,
        rev: revOf(rows),
      })
    }
    return out
  }

  /** Seq of the first segment end after `afterSeq` (where that segment ended), or `null`. */
  async segmentEnd(runId: string, afterSeq: number): Promise<number | null> {
    const row = await this.client
      .from(this.tables.frames)
      .where('run_id', runId)
      .where('kind', 'end')
      .where('body', '')
      .where('seq', '>', afterSeq)
      .min('seq as seq')
      .first()
    return row?.seq === null || row?.seq === undefined ? null : Number(row.seq)
  }

  /**
   * The stream's row and its last row (the one at its `last_seq`), in one statement: one
   * snapshot, so the row read is the last one as of the revision read (a follower's starting
   * point: {@link heads} then {@link lastRow} in one round trip). `last` is `null` when no row is
   * at `last_seq` (none yet); `null` when the stream does not exist.
   */
  async headWithLastRow(
    runId: string
  ): Promise<{ head: StreamState; last: StoredRow | null } | null> {
    const row = await this.client
      .from(`${this.tables.streams} as s`)
      .leftJoin(`${this.tables.frames} as f`, (join) =>
        join.on('f.run_id', '=', 's.run_id').andOn('f.seq', '=', 's.last_seq')
      )
      .select('s.last_seq', 's.rev', 's.status', 's.lease_expires_at', 's.created_at')
      .select(
        'f.seq as f_seq',
        'f.kind as f_kind',
        'f.body as f_body',
        'f.component_id as f_component_id',
        'f.superseded as f_superseded'
      )
      .where('s.run_id', runId)
      .first()
    if (!row) return null
    const last =
      row.f_seq === null || row.f_seq === undefined
        ? null
        : toStoredRow({
            seq: row.f_seq,
            kind: row.f_kind,
            body: row.f_body,
            component_id: row.f_component_id,
            superseded: row.f_superseded,
          })
    return { head: toStreamState(row), last }
  }

  /** The stream's last row (for a follower's starting point), or `null` when it has none. */
  async lastRow(runId: string): Promise<StoredRow | null> {
    const row = await this.client
      .from(this.tables.frames)
      .select('seq', 'kind', 'body', 'component_id', 'superseded')
      .where('run_id', runId)
      .orderBy('seq', 'desc')
      .first()
    return row ? toStoredRow(row) : null
  }

  /**
   * The stream's row, parsed (times in epoch milliseconds), or `null` when the stream does not
   * exist (never opened, or purged).
   */
  async head(runId: string): Promise<
    | (StreamState & {
        runId: string
        updatedAt: number
        endedAt: number | null
      })
    | null
  > {
    const row = await this.client.from(this.tables.streams).where('run_id', runId).first()
    if (!row) return null
    return {
      runId: row.run_id,
      ...toStreamState(row),
      updatedAt: int(row.updated_at),
      endedAt: row.ended_at === null ? null : int(row.ended_at),
    }
  }

  /** Whether the stream's row exists (open, ended or failed, and not purged). */
  async exists(runId: string): Promise<boolean> {
    const row = await this.client
      .from(this.tables.streams)
      .select('run_id')
      .where('run_id', runId)
      .first()
    return Boolean(row)
  }
}

/**
 * A page of one stream's rows: `more` when rows may follow, `rev` the stream's revision as of
 * the rows read (`null` when none was).
 */
export interface StreamPage {
  rows: StoredRow[]
  more: boolean
  rev: number | null
}

/** A frames row read with its size, its body only when small ({@link StreamReads.page}). */
type SizedRow = Omit<RawRow, 'body'> & { size: unknown; body: string | null; stream_rev?: unknown }

/** The stream's revision the rows were read with, or `null`. */
function revOf(rows: SizedRow[]): number | null {
  const rev = rows[0]?.stream_rev
  return rev === null || rev === undefined ? null : int(rev)
}

/** The rows before the first whose body is missing (deleted between two reads). */
function untilMissing<T extends { body: string | null }>(rows: T[]): T[] {
  const missing = rows.findIndex((row) => row.body === null)
  return missing === -1 ? rows : rows.slice(0, missing)
}

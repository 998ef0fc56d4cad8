import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from './schema.js'
import { int } from './rows.js'
import { eventFieldSql } from './frame_sql.js'

/**
 * What a run is doing, derived from rows the package already keeps (no column of its own):
 *
 * - `running`: its stream is open (a writer holds it), or a park of it is being written or
 *   claimed for a resume;
 * - `parked`: its stream ended on a park and a suspension in it waits for a person;
 * - `failed`: its writer died (stream `failed`), or its last frame before the end is an `error`;
 * - `cancelled`: its last frame before the end is the `cancelled` event (a cancel while
 *   parked, or a run aborted while running);
 * - `finished`: it ended any other way.
 */
export type RunStatus = 'running' | 'parked' | 'finished' | 'failed' | 'cancelled'

export const RUN_STATUSES: readonly RunStatus[] = [
  'running',
  'parked',
  'finished',
  'failed',
  'cancelled',
]

/** One run (one stream, a top-level run with its sub-agents) as listed. Times: epoch ms. */
export interface RunSummary {
  runId: string
  status: RunStatus
  /** The thread the run belongs to (its door row's, its parks', else its own id). */
  threadId: string
  lastSeq: number
  createdAt: number
  updatedAt: number
  endedAt: number | null
}

/** A filter for {@link RunList.list}; every field optional. */
export interface RunFilter {
  status?: RunStatus
  threadId?: string
  runId?: string
  /** Only runs started at or after this instant (epoch ms). */
  since?: number
  /** Only runs that called (or asked approval for) a tool of this name. */
  tool?: string
  /** Keyset: the last run of the previous page (newest first: runs older than it come next). */
  before?: { createdAt: number; runId: string }
  /** At most this many runs (default 50). */
  limit?: number
}

/**
 * The SQL expression of {@link RunStatus} for the streams row aliased `s` (the one rule: the runs
 * list, its filter, the run view and the doors' thread lists read it). The row before the end
 * marker is read by a scalar subquery on the primary key (one probe per run shown): as an
 * EXISTS, PostgreSQL hashed every error row of the frames table for each page instead. That
 * row's kind is its column, or its event's own `kind` (`eventFieldSql`), never text inside it.
 */
export function runStatusSql(tables: TableNames, dialect: string) {
  const { suspensions: p, frames: f } = tables
  return `case
  when s.status = 'open' then 'running'
  when s.status = 'failed' then 'failed'
  when exists (select 1 from ${p} p where p.stream_run_id = s.run_id and p.status = 'parked') then 'parked'
  when exists (select 1 from ${p} p where p.stream_run_id = s.run_id and p.status in ('open', 'claimed')) then 'running'
  else coalesce((select case
      when f.kind = 'error' then 'failed'
      when ${eventFieldSql(dialect, 'f', 'kind')} = 'cancelled' then 'cancelled'
      else 'finished' end
    from ${f} f where f.run_id = s.run_id and f.seq = s.last_seq - 1), 'finished')
end`
}

/**
 * The runs of the streams table, newest first, with a status derived in SQL (the same rule
 * everywhere: the list, its filter, the run view). Keyset pagination on `(created_at, run_id)`:
 * a page never skips or repeats a run whatever is written meanwhile.
 */
export class RunList {
  constructor(
    readonly client: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  /** The SQL expression of the run's thread. */
  get #threadSql() {
    const { suspensions: p, aguiRuns: a } = this.tables
    return `coalesce(
  (select min(a.thread_id) from ${a} a where a.stream_run_id = s.run_id),
  (select min(p.thread_id) from ${p} p where p.stream_run_id = s.run_id),
  s.run_id)`
  }

  /** One page of runs, newest first. */
  async list(filter: RunFilter = {}): Promise<RunSummary[]> {
    const client = this.client()
    const { suspensions: p, frames: f, aguiRuns: a, approvals: x } = this.tables
    const dialect = client.dialect.name
    const status = runStatusSql(this.tables, dialect)
    const query = client
      .knexQuery()
      .from({ s: this.tables.streams })
      .select('s.run_id', 's.last_seq', 's.created_at', 's.updated_at', 's.ended_at')
      .select(client.knexRawQuery(`(${status}) as run_status`))
      .select(client.knexRawQuery(`(${this.#threadSql}) as thread_id`))
      .orderBy('s.created_at', 'desc')
      .orderBy('s.run_id', 'desc')
      .limit(filter.limit ?? 50)
    if (filter.status) query.whereRaw(`(${status}) = ?`, [filter.status])
    if (filter.runId) query.where('s.run_id', filter.runId)
    if (filter.since !== undefined) query.where('s.created_at', '>=', filter.since)
    if (filter.threadId) {
      const thread = filter.threadId
      query.whereRaw(
        `(exists (select 1 from ${a} a where a.stream_run_id = s.run_id and a.thread_id = ?)
  or exists (select 1 from ${p} p where p.stream_run_id = s.run_id and p.thread_id = ?)
  or (s.run_id = ? and not exists (select 1 from ${a} a where a.stream_run_id = s.run_id)
      and not exists (select 1 from ${p} p where p.stream_run_id = s.run_id)))`,
        [thread, thread, thread]
      )
    }
    if (filter.tool) {
      // A call is an event frame `tool-input-start` / `tool-input-available` whose own `name`
      // is the tool (read from the frame's structure, `eventFieldSql`); an approval row names
      // it too.
      query.whereRaw(
        `(exists (select 1 from ${x} x where x.stream_run_id = s.run_id and x.tool_name = ?)
  or exists (select 1 from ${f} f where f.run_id = s.run_id and f.kind = 'event'
    and ${eventFieldSql(dialect, 'f', 'kind')} in ('tool-input-start', 'tool-input-available')
    and ${eventFieldSql(dialect, 'f', 'name')} = ?))`,
        [filter.tool, filter.tool]
      )
    }
    if (filter.before) {
      const { createdAt, runId } = filter.before
      query.where((q) =>
        q
          .where('s.created_at', '<', createdAt)
          .orWhere((same) => same.where('s.created_at', createdAt).where('s.run_id', '<', runId))
      )
    }
    const rows: Record<string, any>[] = await query
    return rows.map((row) => ({
      runId: row.run_id,
      status: row.run_status,
      threadId: row.thread_id,
      lastSeq: int(row.last_seq),
      createdAt: int(row.created_at),
      updatedAt: int(row.updated_at),
      endedAt: row.ended_at === null ? null : int(row.ended_at),
    }))
  }

  /** One run as {@link list} shows it, or `null` when its stream does not exist. */
  async find(runId: string): Promise<RunSummary | null> {
    const [run] = await this.list({ runId, limit: 1 })
    return run ?? null
  }
}

import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import { codePointStart } from '../core/text.js'
import type { TableNames } from './schema.js'
import { int } from './rows.js'
import { runStatusSql, type RunStatus } from './run_list.js'
import { eventFieldSql } from './frame_sql.js'

/**
 * One thread of a person (a `useChat` chat is a thread too: both doors keep the same run rows),
 * as their list shows it. Times: epoch ms.
 */
export interface ThreadSummary {
  threadId: string
  /** The newest `title` event of its runs, else its first user message; `null` when neither. */
  title: string | null
  /** When its first run started. */
  createdAt: number
  /** When its newest run started (a new message, an AG-UI resume): the list's order. */
  updatedAt: number
  /** What its newest run is doing (`RunStatus`, the runs list's one rule). */
  status: RunStatus
}

/** Keyset: the last thread of the previous page (newest first: older ones come next). */
export interface ThreadKey {
  updatedAt: number
  threadId: string
}

/** A title is at most this many UTF-16 units (a longer one is cut between code points, `…` added). */
export const TITLE_CHARS = 80

/**
 * A text as a title: whitespace runs as one space, trimmed, at most {@link TITLE_CHARS} units
 * (cut between code points, then `…`); `null` when nothing is left.
 */
export function titleOf(text: string): string | null {
  const flat = text.replace(/\s+/g, ' ').trim()
  if (flat.length === 0) return null
  if (flat.length <= TITLE_CHARS) return flat
  return `${flat.slice(0, codePointStart(flat, TITLE_CHARS - 1)).trimEnd()}…`
}

/** The title a stored event frame's body names, or `null` when it is not a `title` event. */
function titleEvent(body: string): string | null {
  try {
    const frame = JSON.parse(body) as { t?: unknown; event?: { kind?: unknown; title?: unknown } }
    const event = frame?.event
    if (frame?.t !== 'event' || event?.kind !== 'title' || typeof event.title !== 'string') {
      return null
    }
    return titleOf(event.title)
  } catch {
    return null
  }
}

/** Whether `a` comes after `b` in the order (time, then tie-break). */
const later = (a: [number, number], b: [number, number] | undefined) =>
  !b || a[0] > b[0] || (a[0] === b[0] && a[1] > b[1])

/**
 * A person's threads from the doors' run rows (`agent_agui_runs`), newest first by their newest
 * run, a keyset page at a time on `(updatedAt, threadId)`: a page never repeats a thread, and
 * threads started meanwhile land before the first page, never inside the ones still to come.
 * Only the owner's own rows are read (the title, the status included): nothing of anyone else's
 * can show. The index `addThreadListIndex` adds keeps it to that person's rows.
 */
export class ThreadList {
  constructor(
    readonly client: () => QueryClientContract,
    readonly tables: TableNames
  ) {}

  /** One page of `ownerId`'s threads, newest first: at most `limit`, after `before`. */
  async page(
    ownerId: string,
    options: { before?: ThreadKey; limit: number }
  ): Promise<ThreadSummary[]> {
    const client = this.client()
    const runs = this.tables.aguiRuns
    const query = client
      .knexQuery()
      .from({ a: runs })
      .select('a.thread_id')
      .min({ first_at: 'a.created_at' })
      .max({ last_at: 'a.created_at' })
      .where('a.owner_id', ownerId)
      .groupBy('a.thread_id')
      .orderBy('last_at', 'desc')
      .orderBy('a.thread_id', 'desc')
      .limit(options.limit)
    if (options.before) {
      const { updatedAt, threadId } = options.before
      query.havingRaw('max(a.created_at) < ? or (max(a.created_at) = ? and a.thread_id < ?)', [
        updatedAt,
        updatedAt,
        threadId,
      ])
    }
    const rows: Record<string, any>[] = await query
    if (rows.length === 0) return []
    const ids = rows.map((row) => String(row.thread_id))
    const [statuses, titles] = await Promise.all([
      this.#statuses(client, ownerId, ids),
      this.#titles(client, ownerId, ids),
    ])
    return rows.map((row) => ({
      threadId: row.thread_id,
      title: titles.get(row.thread_id) ?? null,
      createdAt: int(row.first_at),
      updatedAt: int(row.last_at),
      status: statuses.get(row.thread_id) ?? 'finished',
    }))
  }

  /** The status of each thread's newest run (as `DoorRunStore.latest` picks it). */
  async #statuses(client: QueryClientContract, ownerId: string, ids: string[]) {
    const runs = this.tables.aguiRuns
    const rows: Record<string, any>[] = await client
      .knexQuery()
      .from({ a: runs })
      .leftJoin({ s: this.tables.streams }, 's.run_id', 'a.stream_run_id')
      .select('a.thread_id', 'a.after_seq')
      .select(
        client.knexRawQuery(`(${runStatusSql(this.tables, client.dialect.name)}) as run_status`)
      )
      .where('a.owner_id', ownerId)
      .whereIn('a.thread_id', ids)
      .whereRaw(
        `a.created_at = (select max(b.created_at) from ${runs} b
  where b.owner_id = a.owner_id and b.thread_id = a.thread_id)`
      )
    const newest = new Map<string, { at: [number, number]; status: RunStatus }>()
    for (const row of rows) {
      const at: [number, number] = [0, int(row.after_seq)]
      if (later(at, newest.get(row.thread_id)?.at)) {
        newest.set(row.thread_id, { at, status: row.run_status })
      }
    }
    return new Map([...newest].map(([id, { status }]) => [id, status]))
  }

  /**
   * Each thread's title: the newest `title` event its runs wrote (the agent named it; a later one
   * renames it), else the text of the first user message a door recorded for it.
   */
  async #titles(client: QueryClientContract, ownerId: string, ids: string[]) {
    const runs = this.tables.aguiRuns
    const [events, firsts]: Record<string, any>[][] = await Promise.all([
      client
        .knexQuery()
        .from({ a: runs })
        .join({ f: this.tables.frames }, 'f.run_id', 'a.stream_run_id')
        .select('a.thread_id', 'a.created_at', 'f.seq', 'f.body')
        .where('a.owner_id', ownerId)
        .whereIn('a.thread_id', ids)
        .where('a.kind', 'start')
        .where('f.kind', 'event')
        // The event's own kind (never text inside it); the body is parsed again before it counts.
        .whereRaw(`${eventFieldSql(client.dialect.name, 'f', 'kind')} = 'title'`),
      client
        .knexQuery()
        .from({ a: runs })
        .select('a.thread_id', 'a.run_id', 'a.input_message')
        .where('a.owner_id', ownerId)
        .whereIn('a.thread_id', ids)
        .whereNotNull('a.input_message')
        .whereRaw(
          `a.created_at = (select min(b.created_at) from ${runs} b
  where b.owner_id = a.owner_id and b.thread_id = a.thread_id and b.input_message is not null)`
        )
        .orderBy('a.run_id', 'desc'),
    ])
    const titles = new Map<string, string>()
    for (const row of firsts) {
      const content = (JSON.parse(row.input_message) as { content?: unknown } | null)?.content
      const title = typeof content === 'string' ? titleOf(content) : null
      // Ordered by run id, descending: the last one set is the smallest (a stable pick on a tie).
      if (title) titles.set(row.thread_id, title)
    }
    const named = new Map<string, { at: [number, number]; title: string }>()
    for (const row of events) {
      const title = titleEvent(row.body)
      const at: [number, number] = [int(row.created_at), int(row.seq)]
      if (title && later(at, named.get(row.thread_id)?.at)) {
        named.set(row.thread_id, { at, title })
      }
    }
    for (const [id, { title }] of named) titles.set(id, title)
    return titles
  }
}

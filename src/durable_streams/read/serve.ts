import type { DurableAnswer, DurableRequest, RawReply } from '../answer.js'
import { formatOffset } from '../protocol/offset.js'
import type { DurableSource } from '../source.js'
import { bodyOf, gather, type Gathered } from './collect.js'
import { responseCursor } from './cursor.js'
import { baseHeaders, H } from './headers.js'
import { readAsked, type ReadAsked } from './query.js'
import { sseChunks } from './sse.js'
import { waitAtTail } from './wait.js'

/** How the read path answers: its limits, and who may cache. */
export interface ReadRules {
  /** Identifies the stream in ETags (its path, or the run's id). */
  id: string
  /** A long-poll at the tail answers 204 after this long. Default 20 s. */
  longPollTimeoutMs?: number
  /** A catch-up answer stops after about this many bytes (the rest is the next read's). Default 1 MiB. */
  chunkBytes?: number
  /** An SSE connection ends after this long (section 10.2). Default 60 s. */
  sseCloseMs?: number
  /**
   * `Cache-Control` of catch-up and long-poll data: `private` (default: a person's streams)
   * or `public`, with `max-age=60, stale-while-revalidate=300` (section 10.1).
   */
  cache?: 'private' | 'public'
}

const DEFAULT_LONG_POLL_MS = 20_000
const DEFAULT_CHUNK_BYTES = 1024 * 1024
const DEFAULT_SSE_CLOSE_MS = 60_000

/**
 * THE read path of the Durable Streams door (PROTOCOL.md sections 5.5-5.8, 8, 10), for any
 * source (`DurableSource`: a stream created through the write path, or a run in a dialect):
 * catch-up (`offset=-1|now|<offset>`, chunked, `Stream-Next-Offset`, `Stream-Up-To-Date`,
 * `Stream-Closed` at the final offset, ETag and 304), long-poll (204 at the tail after the
 * timeout, `Stream-Cursor`), SSE (`sse.ts`). Bad offsets are 400, never answered empty.
 */
export async function serveRead(
  source: DurableSource,
  request: Pick<DurableRequest, 'query' | 'headers' | 'signal'>,
  rules: ReadRules
): Promise<DurableAnswer> {
  const asked = await readAsked(source, request.query)
  if ('kind' in asked) return asked
  await source.touch?.()
  const headers = { ...baseHeaders(), ...source.headers?.() }
  if (asked.live === 'sse') {
    const base64 = !isText(source.contentType)
    return {
      kind: 'stream',
      chunks: sseChunks(
        source,
        asked,
        {
          chunkBytes: rules.chunkBytes ?? DEFAULT_CHUNK_BYTES,
          closeAfterMs: rules.sseCloseMs ?? DEFAULT_SSE_CLOSE_MS,
          base64,
        },
        request.signal
      ),
      contentType: 'text/event-stream',
      headers: {
        ...headers,
        'Cache-Control': 'no-cache',
        ...(base64 ? { [H.sseEncoding]: 'base64' } : {}),
      },
    }
  }
  if (asked.now && asked.live === null) {
    const head = await source.head()
    return {
      kind: 'raw',
      status: 200,
      headers: {
        ...headers,
        'Content-Type': source.contentType,
        [H.nextOffset]: formatOffset(head.tail),
        [H.upToDate]: 'true',
        'Cache-Control': 'no-store',
        ...(head.closed ? { [H.closed]: 'true' } : {}),
      },
      body: source.json ? '[]' : '',
    }
  }
  const chunkBytes = rules.chunkBytes ?? DEFAULT_CHUNK_BYTES
  let gathered = await gatherClosing(source, asked, chunkBytes, request.signal)
  if (asked.live === 'long-poll' && !gathered.hasData) {
    const cursor = { [H.cursor]: responseCursor(asked.cursor) }
    const at = formatOffset(gathered.next)
    if (gathered.closed) return noContent(headers, at, { [H.closed]: 'true' })
    const waited = await waitAtTail(
      source,
      gathered.next,
      rules.longPollTimeoutMs ?? DEFAULT_LONG_POLL_MS,
      request.signal
    )
    await source.touch?.()
    if (waited === 'closed') return noContent(headers, at, { ...cursor, [H.closed]: 'true' })
    if (waited !== 'more') return noContent(headers, at, cursor)
    gathered = await gatherClosing(
      source,
      { ...asked, after: gathered.next },
      chunkBytes,
      request.signal
    )
    if (!gathered.hasData) {
      const extra: Record<string, string> = gathered.closed ? { [H.closed]: 'true' } : {}
      return noContent(headers, formatOffset(gathered.next), { ...cursor, ...extra })
    }
  }
  return dataAnswer(source, asked, gathered, headers, request.headers['if-none-match'], rules)
}

/** A catch-up gathering, closed when it reached the end of a closed stream. */
async function gatherClosing(
  source: DurableSource,
  asked: ReadAsked,
  chunkBytes: number,
  signal: AbortSignal
): Promise<Gathered> {
  const gathered = await gather(source, asked.after, chunkBytes, signal)
  if (gathered.upToDate && !gathered.closed) {
    const head = await source.head()
    if (head.closed && formatOffset(head.tail) === formatOffset(gathered.next))
      gathered.closed = true
  }
  return gathered
}

/** A 200 with what was gathered (or 304 when the client has it: `If-None-Match`). */
function dataAnswer(
  source: DurableSource,
  asked: ReadAsked,
  gathered: Gathered,
  headers: Record<string, string>,
  ifNoneMatch: string | undefined,
  rules: ReadRules
): RawReply {
  const next = formatOffset(gathered.next)
  const closed = gathered.closed && gathered.upToDate
  const etag = `"${Buffer.from(rules.id).toString('base64url')}:${asked.asked}:${next}${closed ? ':c' : ''}"`
  const cache =
    gathered.hasData || closed
      ? `${rules.cache ?? 'private'}, max-age=60, stale-while-revalidate=300`
      : 'no-cache'
  const answered: Record<string, string> = {
    ...headers,
    'Content-Type': source.contentType,
    [H.nextOffset]: next,
    'ETag': etag,
    'Cache-Control': cache,
  }
  if (gathered.upToDate) answered[H.upToDate] = 'true'
  if (closed) answered[H.closed] = 'true'
  if (asked.live === 'long-poll') answered[H.cursor] = responseCursor(asked.cursor)
  if (ifNoneMatch !== undefined && ifNoneMatch === etag) {
    return {
      kind: 'raw',
      status: 304,
      headers: { ...headers, 'ETag': etag, 'Cache-Control': cache },
    }
  }
  return { kind: 'raw', status: 200, headers: answered, body: bodyOf(source, gathered) }
}

function noContent(
  headers: Record<string, string>,
  at: string,
  extra: Record<string, string>
): RawReply {
  return {
    kind: 'raw',
    status: 204,
    headers: {
      ...headers,
      [H.nextOffset]: at,
      [H.upToDate]: 'true',
      'Cache-Control': 'no-store',
      ...extra,
    },
  }
}

/** `HEAD` (section 5.5): where the stream ends, its content type, closure; never cached. */
export async function serveHead(
  source: DurableSource,
  rules: Pick<ReadRules, 'id'>
): Promise<RawReply> {
  const head = await source.head()
  const tail = formatOffset(head.tail)
  return {
    kind: 'raw',
    status: 200,
    headers: {
      ...baseHeaders(),
      ...source.headers?.(),
      'Content-Type': source.contentType,
      [H.nextOffset]: tail,
      'Cache-Control': 'no-store',
      'ETag': `"${Buffer.from(rules.id).toString('base64url')}:-1:${tail}${head.closed ? ':c' : ''}"`,
      ...(head.closed ? { [H.closed]: 'true' } : {}),
    },
  }
}

/** Whether SSE data of `contentType` is text (`text/*`, `application/json`), else base64. */
export function isText(contentType: string): boolean {
  const type = contentType.split(';')[0].trim().toLowerCase()
  return type.startsWith('text/') || type === 'application/json'
}

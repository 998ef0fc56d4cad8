import type { StreamReply } from '../answer.js'
import { formatOffset } from '../protocol/offset.js'
import type { DurableSource } from '../source.js'
import { bodyOf, gather } from './collect.js'
import { responseCursor } from './cursor.js'
import type { ReadAsked } from './query.js'
import { waitAtTail } from './wait.js'

/** What an SSE read needs beyond the source: its limits. */
export interface SseRules {
  chunkBytes: number
  /** Close the connection after this long (about 60 s: CDN collapsing, section 10.2). */
  closeAfterMs: number
  /** Data events carry base64 (a stream neither `text/*` nor `application/json`). */
  base64: boolean
}

/** An SSE event: its lines each prefixed `data:` (a line break in the data starts a new one). */
function sseEvent(event: 'data' | 'control', payload: string): string {
  return `event: ${event}\n${payload
    .split(/\r\n|\r|\n/)
    .map((line) => `data:${line}`)
    .join('\n')}\n\n`
}

/**
 * An SSE read (PROTOCOL.md section 5.8): catch-up chunks, then what commits, each `data` event
 * followed by a `control` event (`streamNextOffset`; `streamCursor` and `upToDate` while open;
 * `streamClosed` once the final offset is sent, and the connection ends); base64 data for a
 * binary stream. Ends after `closeAfterMs` (the client reconnects from the last offset) or when
 * `signal` aborts.
 */
export async function* sseChunks(
  source: DurableSource,
  asked: ReadAsked,
  rules: SseRules,
  signal: AbortSignal
): StreamReply['chunks'] {
  const deadline = Date.now() + rules.closeAfterMs
  let after = asked.after
  while (!signal.aborted) {
    const gathered = await gather(source, after, rules.chunkBytes, signal)
    if (gathered.upToDate && !gathered.closed) {
      const head = await source.head()
      if (head.closed && formatOffset(head.tail) === formatOffset(gathered.next))
        gathered.closed = true
    }
    if (gathered.hasData) {
      const body = bodyOf(source, gathered)
      const payload =
        typeof body === 'string'
          ? body
          : rules.base64
            ? Buffer.from(body).toString('base64')
            : Buffer.from(body).toString('utf8')
      yield sseEvent('data', payload)
    }
    const next = formatOffset(gathered.next)
    if (gathered.closed) {
      yield sseEvent(
        'control',
        JSON.stringify({ streamNextOffset: next, streamClosed: true, upToDate: true })
      )
      return
    }
    const control: Record<string, unknown> = {
      streamNextOffset: next,
      streamCursor: responseCursor(asked.cursor),
    }
    if (gathered.upToDate) control.upToDate = true
    yield sseEvent('control', JSON.stringify(control))
    after = gathered.next
    if (!gathered.upToDate) continue
    const left = deadline - Date.now()
    if (left <= 0) return
    const waited = await waitAtTail(source, after, left, signal)
    if (waited === 'timeout' || waited === 'aborted') return
  }
}

import type { RawReply } from '../answer.js'

/**
 * The protocol's header names (PROTOCOL.md section 13.2) and the headers every answer of the
 * Durable Streams door carries (section 12.7: `X-Content-Type-Options: nosniff`,
 * `Cross-Origin-Resource-Policy`; the CORS headers a browser client needs to read them).
 */
export const H = {
  nextOffset: 'Stream-Next-Offset',
  upToDate: 'Stream-Up-To-Date',
  closed: 'Stream-Closed',
  cursor: 'Stream-Cursor',
  ttl: 'Stream-TTL',
  expiresAt: 'Stream-Expires-At',
  seq: 'Stream-Seq',
  forkedFrom: 'Stream-Forked-From',
  forkOffset: 'Stream-Fork-Offset',
  forkSubOffset: 'Stream-Fork-Sub-Offset',
  producerId: 'Producer-Id',
  producerEpoch: 'Producer-Epoch',
  producerSeq: 'Producer-Seq',
  producerExpectedSeq: 'Producer-Expected-Seq',
  producerReceivedSeq: 'Producer-Received-Seq',
  sseEncoding: 'Stream-SSE-Data-Encoding',
} as const

/** What a browser may send (a preflight's `Access-Control-Allow-Headers`). */
const REQUEST_HEADERS = [
  'Content-Type',
  'Authorization',
  'If-None-Match',
  'Last-Event-ID',
  H.seq,
  H.ttl,
  H.expiresAt,
  H.closed,
  H.forkedFrom,
  H.forkOffset,
  H.forkSubOffset,
  H.producerId,
  H.producerEpoch,
  H.producerSeq,
]

/** What a browser's script may read of an answer (`Access-Control-Expose-Headers`). */
const RESPONSE_HEADERS = [
  H.nextOffset,
  H.cursor,
  H.upToDate,
  H.closed,
  H.ttl,
  H.expiresAt,
  H.producerEpoch,
  H.producerSeq,
  H.producerExpectedSeq,
  H.producerReceivedSeq,
  H.sseEncoding,
  'ETag',
  'Content-Type',
  'Location',
]

/** The headers of every answer: security (section 12.7) and what a script may read. */
export function baseHeaders(): Record<string, string> {
  return {
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Resource-Policy': 'cross-origin',
    'Access-Control-Expose-Headers': RESPONSE_HEADERS.join(', '),
  }
}

/**
 * The answer to a CORS preflight (`OPTIONS`): every method of the protocol and every header it
 * reads, `If-None-Match` included (a browser's conditional catch-up read). Which origins may
 * ask is the app's CORS middleware's to say; this only names what the protocol needs.
 */
export function preflightAnswer(): RawReply {
  return {
    kind: 'raw',
    status: 204,
    headers: {
      ...baseHeaders(),
      'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE, HEAD, OPTIONS',
      'Access-Control-Allow-Headers': REQUEST_HEADERS.join(', '),
      'Access-Control-Max-Age': '600',
    },
  }
}

/** A refusal as the protocol's status with a JSON `{ code, message }` body, never echoing input. */
export function dsRefusal(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {}
): RawReply {
  return {
    kind: 'raw',
    status,
    headers: {
      ...baseHeaders(),
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      ...headers,
    },
    body: JSON.stringify({ code, message }),
  }
}

import type { RawReply } from '../answer.js'
import type { DurableRecord, DurableTx } from '../../store/durable_store.js'
import { formatOffset } from '../protocol/offset.js'
import { baseHeaders, dsRefusal, H } from '../read/headers.js'
import { gone, notFound, usable, type WriteContext, type WriteRequest } from './context.js'
import { checkProducer, readProducer, type Producer } from './producers.js'
import { expired, isJsonType, jsonMessages, mediaType, NOT_JSON, seqAfter } from './rules.js'
import { nowMs } from '../../store/sql.js'

const bad = (message: string) => dsRefusal(400, 'invalid_input', message)

/** 409 + `Stream-Closed`: the stream is closed (no append after its final offset). */
function closedAnswer(record: DurableRecord): RawReply {
  return dsRefusal(409, 'stream_closed', 'The stream is closed.', {
    [H.closed]: 'true',
    [H.nextOffset]: formatOffset({ seq: record.lastSeq }),
  })
}

const closedByOf = (producer: Producer | null) =>
  producer ? `${producer.epoch} ${producer.seq} ${producer.id}` : null

/**
 * `POST` (PROTOCOL.md 5.2, 5.2.1, 5.3): append the body (one append; JSON mode flattens an
 * array one level, `[]` is 400), `Content-Type` the stream's (409), `Stream-Seq` strictly
 * increasing (409), idempotent producers (`Producer-Id`/`-Epoch`/`-Seq`: 200 accepted, 204
 * duplicate, 403 stale epoch, 409 sequence gap, 400 a new epoch not at 0), `Stream-Closed: true`
 * to close (with or without a last append; a closed stream answers 409 + `Stream-Closed`). One
 * transaction locks the stream's row: nothing is written unless all of it is.
 */
export async function appendStream(
  ctx: WriteContext,
  request: WriteRequest,
  runId: string
): Promise<RawReply> {
  const producer = readProducer(request.headers)
  if (producer && 'kind' in producer) return producer
  const close = request.headers['stream-closed']?.toLowerCase() === 'true'
  const found = await usable(ctx, request, runId, 'append')
  if ('kind' in found) return found
  const empty = request.bytes.byteLength === 0
  if (empty && !close) return bad('An append needs a body.')
  let body: string | null = null
  if (!empty) {
    const type = request.headers['content-type']
    if (type === undefined) return bad('An append needs a Content-Type.')
    if (!found.closed && mediaType(type) !== mediaType(found.contentType))
      return dsRefusal(409, 'content_type_mismatch', 'The Content-Type is not the stream’s.')
    if (isJsonType(found.contentType)) {
      const messages = jsonMessages(request.bytes)
      if (!messages) return bad(NOT_JSON)
      if (messages.length === 0) return bad('An empty JSON array appends nothing.')
      body = JSON.stringify(messages)
    } else body = Buffer.from(request.bytes).toString('base64')
  }
  const seq = request.headers['stream-seq']
  let appendedAfter: number | null = null
  const reply = await ctx.store.transaction(async (tx) => {
    const record = await tx.lock(runId)
    if (!record || expired(record.expiresAt)) return notFound()
    if (record.softDeleted) return gone()
    if (record.closed) {
      if (producer && record.closedBy === closedByOf(producer)) {
        return answer(204, record.lastSeq, producer, true)
      }
      // Closing a closed stream again (no body, no producer): done already.
      if (body === null && !producer) return answer(204, record.lastSeq, null, true)
      return closedAnswer(record)
    }
    if (producer) {
      const verdict = await checkProducer(tx, runId, producer)
      if (verdict !== 'accepted') return verdict
    }
    if (seq !== undefined && body !== null) {
      if (!seqAfter(seq, record.lastStreamSeq))
        return dsRefusal(409, 'sequence_conflict', 'Stream-Seq must increase.')
      await tx.update(runId, { last_stream_seq: seq })
    }
    let last = record.lastSeq
    if (body !== null) {
      appendedAfter = last
      last = await tx.append(runId, last, [body])
    }
    if (producer) await tx.setProducer(runId, producer.id, producer.epoch, producer.seq)
    if (close) await tx.close(runId, closedByOf(producer))
    await touchIn(tx, record)
    return answer(producer ? (body === null ? 204 : 200) : 204, last, producer, close)
  })
  // Committed: the subscriptions following the stream are told (PROTOCOL.md 7).
  if (appendedAfter !== null && reply.status < 300) ctx.appended?.(request.path, appendedAfter)
  return reply
}

/** Renew a sliding TTL inside the append's transaction. */
async function touchIn(tx: DurableTx, record: DurableRecord) {
  if (record.ttlSeconds !== null)
    await tx.update(record.runId, { expires_at: nowMs() + record.ttlSeconds * 1000 })
}

function answer(
  status: number,
  last: number,
  producer: Producer | null,
  closed: boolean
): RawReply {
  const headers: Record<string, string> = {
    ...baseHeaders(),
    [H.nextOffset]: formatOffset({ seq: last }),
  }
  if (producer) {
    headers[H.producerEpoch] = String(producer.epoch)
    headers[H.producerSeq] = String(producer.seq)
  }
  if (closed) headers[H.closed] = 'true'
  return { kind: 'raw', status, headers }
}

import type { RawReply } from '../answer.js'
import type { DurableRecord, DurableTx, NewDurable } from '../../store/durable_store.js'
import { formatOffset } from '../protocol/offset.js'
import { baseHeaders, dsRefusal, H } from '../read/headers.js'
import { allowed, expire, notFound, type WriteContext, type WriteRequest } from './context.js'
import {
  expired,
  forkPosition,
  forkSourcePath,
  isContentType,
  isJsonType,
  jsonMessages,
  mediaType,
  NOT_JSON,
  runIdOfPath,
  wholeNumber,
} from './rules.js'
import { nowMs } from '../../store/sql.js'

/** A create as asked: its headers read and checked. */
interface CreateAsked {
  contentType: string | undefined
  ttlSeconds: number | null
  expiresAtText: string | null
  closed: boolean
  forkedFrom: string | null
  forkOffset: string | null
  forkSubOffset: number | null
}

const bad = (message: string) => dsRefusal(400, 'invalid_input', message)
const conflict = (message: string) => dsRefusal(409, 'stream_conflict', message)

function readCreate(headers: WriteRequest['headers']): CreateAsked | RawReply {
  const forkedFrom = headers['stream-forked-from'] ?? null
  const type = headers['content-type']
  const ttl = headers['stream-ttl']
  const expiresAt = headers['stream-expires-at']
  if (ttl !== undefined && expiresAt !== undefined)
    return bad('Give Stream-TTL or Stream-Expires-At, not both.')
  const ttlSeconds = wholeNumber(ttl)
  if (ttl !== undefined && ttlSeconds === null) return bad('Stream-TTL is not a number of seconds.')
  if (expiresAt !== undefined && Number.isNaN(Date.parse(expiresAt)))
    return bad('Stream-Expires-At is not a time.')
  const forkOffset = headers['stream-fork-offset'] ?? null
  const sub = headers['stream-fork-sub-offset']
  if (sub !== undefined && forkedFrom === null)
    return bad('Stream-Fork-Sub-Offset needs Stream-Forked-From.')
  const forkSubOffset = wholeNumber(sub)
  if (sub !== undefined && forkSubOffset === null)
    return bad('Stream-Fork-Sub-Offset is not a number.')
  if (forkSubOffset && forkOffset === null)
    return bad('Stream-Fork-Sub-Offset needs Stream-Fork-Offset.')
  return {
    contentType: isContentType(type)
      ? type.trim()
      : forkedFrom
        ? undefined
        : 'application/octet-stream',
    ttlSeconds,
    expiresAtText: expiresAt ?? null,
    closed: headers['stream-closed']?.toLowerCase() === 'true',
    forkedFrom,
    forkOffset,
    forkSubOffset: forkSubOffset || null,
  }
}

/** Whether an existing stream is what `asked` would create (a repeated PUT: 200). */
function sameConfig(record: DurableRecord, asked: CreateAsked, runIdOfSource: string | null) {
  const type =
    asked.contentType ?? (asked.forkedFrom ? record.contentType : 'application/octet-stream')
  return (
    mediaType(type) === mediaType(record.contentType) &&
    (asked.forkedFrom === null || asked.ttlSeconds !== null || record.forkSource === null
      ? asked.ttlSeconds === record.ttlSeconds
      : true) &&
    (asked.forkedFrom === null || asked.expiresAtText !== null
      ? asked.expiresAtText === record.expiresAtText
      : true) &&
    asked.closed === record.closed &&
    runIdOfSource === record.forkSource &&
    (asked.forkOffset === null || forkPosition(asked.forkOffset)?.seq === record.forkSeq) &&
    (asked.forkSubOffset ?? 0) === (record.forkSubOffset ?? 0)
  )
}

/**
 * `PUT` (PROTOCOL.md 5.1 and 4.2): create the stream (201 with `Location`), or confirm it (200:
 * the same configuration), or refuse (409: another configuration, or a soft-deleted path);
 * `Stream-TTL` / `Stream-Expires-At`, `Stream-Closed`, the body as its first append, a fork of
 * another stream at an offset (its data up to there copied) and sub-offset.
 */
export async function createStream(ctx: WriteContext, request: WriteRequest): Promise<RawReply> {
  const asked = readCreate(request.headers)
  if ('kind' in asked) return asked
  if (asked.forkedFrom !== null) asked.forkedFrom = forkSourcePath(asked.forkedFrom, request.url)
  const runId = runIdOfPath(request.path)
  const sourceRunId = asked.forkedFrom === null ? null : runIdOfPath(asked.forkedFrom)
  let existing = await ctx.store.find(runId)
  if (existing && expired(existing.expiresAt)) {
    await expire(ctx, runId)
    existing = await ctx.store.find(runId)
  }
  if (existing) {
    if (!(await allowed(ctx, request, 'create', existing.owner))) return notFound()
    if (existing.softDeleted) return conflict('The path is in use by forks of a deleted stream.')
    if (!sameConfig(existing, asked, sourceRunId))
      return conflict('The stream exists with another configuration.')
    return created(200, existing, request)
  }
  if (!(await allowed(ctx, request, 'create'))) return notFound()
  let source: DurableRecord | null = null
  if (sourceRunId !== null) {
    source = await ctx.store.find(sourceRunId)
    if (source && expired(source.expiresAt)) {
      await expire(ctx, sourceRunId)
      source = null
    }
    if (
      !source ||
      !(await allowed(ctx, { ...request, path: asked.forkedFrom! }, 'read', source.owner))
    )
      return dsRefusal(404, 'not_found', 'No such source stream.')
    if (source.softDeleted) return conflict('The source stream was deleted.')
    if (
      asked.contentType !== undefined &&
      mediaType(asked.contentType) !== mediaType(source.contentType)
    )
      return conflict('The fork must keep its source content type.')
  }
  const contentType = asked.contentType ?? source?.contentType ?? 'application/octet-stream'
  const json = isJsonType(contentType)
  let bodies: string[] = []
  if (request.bytes.byteLength > 0) {
    if (json) {
      const messages = jsonMessages(request.bytes)
      if (!messages) return bad(NOT_JSON)
      if (messages.length > 0) bodies = [JSON.stringify(messages)]
    } else bodies = [Buffer.from(request.bytes).toString('base64')]
  }
  const record: NewDurable = {
    runId,
    path: request.path,
    contentType,
    ...expiry(asked, source),
    closed: asked.closed,
    forkSource: sourceRunId,
    forkSeq: null,
    forkSubOffset: asked.forkSubOffset,
    owner: request.principal?.id ?? null,
  }
  try {
    const answer = await ctx.store.transaction(async (tx) => {
      let prefix: string | null = null
      if (source) {
        const locked = await tx.lock(source.runId)
        if (!locked || locked.softDeleted)
          return dsRefusal(404, 'not_found', 'No such source stream.')
        const at =
          asked.forkOffset === null ? { seq: locked.lastSeq } : forkPosition(asked.forkOffset)
        if (!at || at.seq > locked.lastSeq) return bad('The fork offset is not one of the source.')
        record.forkSeq = at.seq
        if (asked.forkSubOffset) {
          const cut = await subOffsetPrefix(tx, locked, at.seq, asked.forkSubOffset)
          if (cut === null) return bad('The fork sub-offset passes the append it points into.')
          prefix = cut
        }
      }
      await tx.create(record, [])
      let last = 0
      if (source && record.forkSeq) {
        await tx.copyRows(source.runId, runId, record.forkSeq)
        last = record.forkSeq
      }
      const own = [...(prefix === null ? [] : [prefix]), ...bodies]
      const before = last
      if (own.length > 0) last = await tx.append(runId, last, own)
      return { last, before }
    })
    if ('kind' in answer) return answer
    if (answer.last > answer.before) ctx.appended?.(request.path, answer.before)
  } catch (error) {
    // Created meanwhile by another request: answer as for an existing stream.
    const raced = await ctx.store.find(runId)
    if (!raced) throw error
    return sameConfig(raced, asked, sourceRunId)
      ? created(200, raced, request)
      : conflict('The stream exists with another configuration.')
  }
  const stored = await ctx.store.find(runId)
  if (!stored) return notFound()
  return created(201, stored, request)
}

/** A fork's expiry (4.2): its own TTL or expiry, else its source's. */
function expiry(asked: CreateAsked, source: DurableRecord | null) {
  const now = nowMs()
  let ttlSeconds = asked.ttlSeconds
  let expiresAtText = asked.expiresAtText
  if (source && ttlSeconds === null && expiresAtText === null) {
    ttlSeconds = source.ttlSeconds
    expiresAtText = source.expiresAtText
  }
  const expiresAt =
    ttlSeconds !== null
      ? now + ttlSeconds * 1000
      : expiresAtText !== null
        ? Date.parse(expiresAtText)
        : null
  return { ttlSeconds, expiresAtText, expiresAt }
}

/**
 * The first `count` messages (JSON mode) or bytes of the source's append after `seq`, as a
 * stored body; null when there is no such append or it is shorter.
 */
async function subOffsetPrefix(
  tx: DurableTx,
  source: DurableRecord,
  seq: number,
  count: number
): Promise<string | null> {
  const row = await tx.trx
    .from(tx.tables.frames)
    .where('run_id', source.runId)
    .where('seq', seq + 1)
    .select('body')
    .first()
  if (!row) return null
  if (isJsonType(source.contentType)) {
    const messages = JSON.parse(String(row.body)) as unknown[]
    return count <= messages.length ? JSON.stringify(messages.slice(0, count)) : null
  }
  const bytes = Buffer.from(String(row.body), 'base64')
  return count <= bytes.byteLength ? bytes.subarray(0, count).toString('base64') : null
}

function created(status: 200 | 201, record: DurableRecord, request: WriteRequest): RawReply {
  const headers: Record<string, string> = {
    ...baseHeaders(),
    'Content-Type': record.contentType,
    [H.nextOffset]: formatOffset({ seq: record.lastSeq }),
  }
  if (status === 201 && request.url) headers.Location = request.url.split('?')[0]
  if (record.closed) headers[H.closed] = 'true'
  return { kind: 'raw', status, headers }
}

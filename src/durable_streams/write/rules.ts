import { createHash } from 'node:crypto'
import type { Cursor } from '../../core/cursor.js'
import { parseOffset } from '../protocol/offset.js'
import { nowMs } from '../../store/sql.js'
import { MAX_JSON_DEPTH, textTooDeep } from '../../core/json_depth.js'

/**
 * The write path's small rules, each once: a path's run id, content types, JSON mode, the
 * protocol's integer headers, `Stream-Seq` order, expiry.
 */

/** The streams-table run id of the stream at `path`: `ds:` and a hash (paths may be long, hold `/`). */
export function runIdOfPath(path: string): string {
  return `ds:${createHash('sha256').update(path).digest('hex').slice(0, 40)}`
}

/**
 * The stream path (the door's: `/v1/stream/...`, decoded like its route's) a `Stream-Forked-From`
 * names: "the path component of the source stream's URL" (PROTOCOL.md 4.2), so under the door's
 * mount (what precedes `/v1/stream/` in `url`, the request's own URL) and percent-encoded; a
 * path under the door is taken as well. An escape that does not decode is kept as sent.
 */
export function forkSourcePath(value: string, url: string | undefined): string {
  let path = value
  const pathname = url ? new URL(url).pathname : ''
  const mount = pathname.slice(0, Math.max(0, pathname.indexOf('/v1/stream/')))
  if (mount !== '' && path.startsWith(`${mount}/v1/stream/`)) path = path.slice(mount.length)
  try {
    return path
      .split('/')
      .map((segment) => decodeURIComponent(segment))
      .join('/')
  } catch {
    return path
  }
}

/** A content type as compared: its media type, lower-case, without parameters. */
export function mediaType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase()
}

/** Whether a `Content-Type` header names a media type at all (`type/subtype`). */
export function isContentType(value: string | undefined): value is string {
  return value !== undefined && /^[\w.+-]+\/[\w.+-]+/.test(value.trim())
}

/** JSON mode (PROTOCOL.md 9.1). */
export const isJsonType = (contentType: string) => mediaType(contentType) === 'application/json'

/** A non-negative decimal integer header (`Stream-TTL`, `Producer-Epoch`, ...), or null. */
export function wholeNumber(value: string | undefined, strict = true): number | null {
  if (value === undefined) return null
  if (!(strict ? /^(0|[1-9][0-9]*)$/ : /^[0-9]+$/).test(value)) return null
  const number = Number(value)
  return Number.isSafeInteger(number) ? number : null
}

/** `Stream-Seq` order: lexicographic, strictly increasing (section 5.2). */
export const seqAfter = (seq: string, last: string | null) => last === null || seq > last

/**
 * A `Stream-Fork-Offset`: an offset of the source (`parseOffset`'s) or `-1` for its start. The
 * reference server's start offset (`0000000000000000_0000000000000000`, which the conformance
 * suite sends as "offset zero") also reads as the start. Sub-row positions are not positions of
 * a write-path stream: null.
 */
export function forkPosition(value: string): Cursor | null {
  if (value === '0000000000000000_0000000000000000') return { seq: 0 }
  const parsed = parseOffset(value)
  if (!parsed || 'tail' in parsed || parsed.cursor.offset !== undefined) return null
  return parsed.cursor
}

/** Whether a stream with this expiry has expired at `now`. */
export const expired = (expiresAt: number | null, now = nowMs()) =>
  expiresAt !== null && expiresAt <= now

/** Why {@link jsonMessages} refused a body (the 400's message). */
export const NOT_JSON = `The body is not JSON, or nests deeper than ${MAX_JSON_DEPTH} levels.`

/**
 * An append's body in JSON mode as the messages it carries: an array is flattened one level
 * (a batch), anything else is one message; `null` when it is not JSON or breaks the package's
 * depth rule (`json_depth.ts`: what is stored is walked by `JSON.stringify` on every read).
 */
export function jsonMessages(bytes: Uint8Array): unknown[] | null {
  let value: unknown
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    if (textTooDeep(text)) return null
    value = JSON.parse(text)
  } catch {
    return null
  }
  return Array.isArray(value) ? value : [value]
}

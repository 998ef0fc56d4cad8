import { DEFAULTS } from '../defaults.js'
import { mediaTypeRefusal } from './media_type.js'
import { BODY_INCOMPLETE, NOT_JSON, NOT_UTF8, bodyTooLarge, type Refusal } from './refusal.js'

/**
 * The one body reader of every JSON route of the package, on both transports: the Fetch-API
 * handlers read a `Request`'s body with it (`fetch_adapter.ts`), the AdonisJS routes Node's
 * `IncomingMessage` (`body_guard.ts`, before the app's bodyparser, which then reads nothing: its
 * conversions, `""` to `null` among them, never apply). Both therefore see the same JSON and
 * answer the same refusals, `{ code, message }`, nothing read past the point of refusal:
 *
 * - 415 `unsupported_media_type`: the `Content-Type` is not JSON (`media_type.ts`), before a byte;
 * - 413 `body_too_large`: the declared `Content-Length` or the bytes received pass `maxBytes`
 *   (the reading stops there; the rest is discarded, {@link discardBody});
 * - 400 `body_incomplete`: the body's stream failed before its end (the client went away, or
 *   its connection was reset, mid-body): the request ends there, never the process;
 * - 400 `invalid_input`: the bytes are not UTF-8, or not JSON (an empty body included, unless
 *   the route's body is `optional`: then no bytes read as `undefined`).
 *
 * `JSON.parse` does not recurse on the stack, so a deeply nested body parses here and is refused
 * by the route's depth rule (`tooDeep`, naming `maxDepth`).
 */

/** A request's body as the reader takes it: two headers and the bytes. */
export interface BodySource {
  contentType: string | null | undefined
  contentLength: string | null | undefined
  /** A Fetch `Request`'s `body`, or Node's `IncomingMessage` (both async iterables of bytes). */
  bytes: AsyncIterable<Uint8Array> | null | undefined
}

/** What a route allows of its body. */
export interface BodyRules {
  /** Most bytes as received. */
  maxBytes: number
  /** No bytes at all read as `undefined` (a route that may take no body: a decision, a cancel). */
  optional?: boolean
}

/** A body read: its JSON value and text, or the refusal. */
export type BodyRead = { value: unknown; text: string } | { refused: Refusal }

export async function readJsonBody(source: BodySource, rules: BodyRules): Promise<BodyRead> {
  const wrongType = mediaTypeRefusal(source.contentType)
  if (wrongType) return { refused: wrongType }
  const read = await readBytesBody(source, rules.maxBytes)
  if ('refused' in read) return read
  if (read.bytes.byteLength === 0 && rules.optional) return { value: undefined, text: '' }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(read.bytes)
  } catch {
    return { refused: NOT_UTF8 }
  }
  try {
    return { value: JSON.parse(text), text }
  } catch {
    return { refused: NOT_JSON }
  }
}

/**
 * A raw body (a route with `body: 'bytes'`, any content type), as received: 413
 * `body_too_large` when the declared `Content-Length` or the bytes received pass `maxBytes`
 * (nothing more is read; the rest is discarded), 400 `body_incomplete` when its stream failed.
 */
export async function readBytesBody(
  source: Omit<BodySource, 'contentType'>,
  maxBytes: number
): Promise<{ bytes: Uint8Array } | { refused: Refusal }> {
  const tooLarge = { refused: bodyTooLarge(maxBytes) }
  if (Number(source.contentLength ?? Number.NaN) > maxBytes) return tooLarge
  const iterator = source.bytes?.[Symbol.asyncIterator]()
  const parts: Uint8Array[] = []
  let size = 0
  try {
    while (iterator) {
      const next = await iterator.next()
      if (next.done) break
      size += next.value.byteLength
      if (size > maxBytes) {
        void discardRest(iterator)
        return tooLarge
      }
      parts.push(next.value)
    }
  } catch {
    return { refused: BODY_INCOMPLETE }
  }
  return { bytes: new Uint8Array(Buffer.concat(parts)) }
}

/**
 * Read a body nobody will use and drop it, in the background, up to
 * `DEFAULTS.discardBodyBytes`; past that, stop reading (the host closes the connection). A
 * client still sending a body the server refused early (a declared 10 MiB against a 1 MiB cap)
 * then reads the refusal rather than a reset connection: a server that closes a connection with
 * unread bytes in it resets it, and the client may lose the answer it was sent. Never throws.
 */
export function discardBody(bytes: AsyncIterable<Uint8Array> | null | undefined) {
  if (!bytes) return
  try {
    void discardRest(bytes[Symbol.asyncIterator]())
  } catch {
    // Read by someone else already (a locked stream): theirs to finish.
  }
}

async function discardRest(iterator: AsyncIterator<Uint8Array>) {
  let left = DEFAULTS.discardBodyBytes
  try {
    while (left > 0) {
      const next = await iterator.next()
      if (next.done) return
      left -= next.value.byteLength
    }
    await iterator.return?.()
  } catch {
    // The client went away meanwhile: nothing more to discard.
  }
}

import { InvalidAgUiInputError } from '../errors.js'
import { mediaTypeRefusal } from './media_type.js'
import { bodyTooLarge, type Refusal } from './refusal.js'

/**
 * A Fetch-API request's JSON body, read no further than `maxBytes`, for the Fetch-API handlers
 * (the AdonisJS routes get theirs from the bodyparser). Refusals, nothing read past the point of
 * refusal:
 *
 * - 415 `unsupported_media_type`: the `Content-Type` is not JSON (`media_type.ts`), before a byte;
 * - 413 `body_too_large`: the declared `Content-Length` or the bytes received pass `maxBytes`
 *   (the reading stops there);
 * - 400 `invalid_input`: the bytes are not JSON (an empty body included).
 *
 * `JSON.parse` does not recurse on the stack, so a deeply nested body parses here and is refused
 * by the door's depth rule (`tooDeep`, 400 `invalid_input` naming `maxDepth`).
 */
export async function readJsonBody(
  request: Request,
  maxBytes: number
): Promise<{ value: unknown } | { refused: Refusal }> {
  const wrongType = mediaTypeRefusal(request.headers.get('content-type'))
  if (wrongType) return { refused: wrongType }
  const tooLarge = { refused: bodyTooLarge(maxBytes) }
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (declared > maxBytes) return tooLarge
  const parts: Uint8Array[] = []
  let size = 0
  for await (const part of request.body ?? []) {
    size += part.byteLength
    if (size > maxBytes) return tooLarge
    parts.push(part)
  }
  try {
    return { value: JSON.parse(Buffer.concat(parts).toString('utf8')) }
  } catch {
    return { refused: asRefusal(new InvalidAgUiInputError('The body must be JSON')) }
  }
}

const asRefusal = (error: InvalidAgUiInputError): Refusal => ({
  status: error.status,
  code: error.code,
  message: error.message,
})

/**
 * The one media-type rule of every JSON route, on both transports (the AdonisJS controllers and
 * the Fetch handler): the body must be `application/json` or a `+json` type. A cross-site HTML
 * form can only send `text/plain`, `application/x-www-form-urlencoded` or `multipart/form-data`
 * without a CORS preflight, so it can start, resume or decide nothing.
 */

/** The refusal of a body of any other type: 415 `unsupported_media_type`. */
export const UNSUPPORTED_MEDIA_TYPE = Object.freeze({
  status: 415 as const,
  code: 'unsupported_media_type' as const,
  message: 'The body must be application/json',
})

/**
 * Whether a `Content-Type` header names JSON: `application/json` or `application/<x>+json`, any
 * case, parameters (`; charset=utf-8`) ignored. A missing header is not JSON, also for a route
 * that reads no body (cancel): a form can send an empty body too.
 */
export function isJsonMediaType(contentType: string | null | undefined): boolean {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase()
  return type === 'application/json' || /^application\/[a-z0-9!#$&^_.+-]+\+json$/.test(type)
}

/** {@link UNSUPPORTED_MEDIA_TYPE} unless `contentType` names JSON; `null` when it does. */
export function mediaTypeRefusal(contentType: string | null | undefined) {
  return isJsonMediaType(contentType) ? null : UNSUPPORTED_MEDIA_TYPE
}

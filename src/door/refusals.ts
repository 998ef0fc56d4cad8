import type { Refused } from './reply.js'

/**
 * The refusals every door answers alike, before anything is sent (nothing was written). A door
 * names its own protocol's refusals with {@link refused}.
 */

/** A refusal: `status` and `{ code, message }`. */
export function refused(status: number, code: string, message: string): Refused {
  return { kind: 'refused', status, code, message }
}

/** No such run (or chat), or another principal's: answered alike (404 `not_found`). */
export function notFound(message = 'No such run'): Refused {
  return refused(404, 'not_found', message)
}

/** A cursor (SSE id) the door did not mint, or one past the stream's stored head (400). */
export function invalidCursor(): Refused {
  return refused(400, 'invalid_cursor', 'Invalid cursor')
}

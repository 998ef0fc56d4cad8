import {
  AgUiBodyTooLargeError,
  InvalidAgUiInputError,
  ReplicaShutdownError,
  refusalOf,
} from '../errors.js'

/**
 * The one shape of a refusal before a stream opens, on every route of both transports (the
 * AdonisJS controllers and the Fetch-API handlers): a 4xx status (503 on a draining replica) and
 * the JSON body `{ code, message }` (and `runId` where a refusal names a run: `thread_busy`),
 * nothing else (a door's reply carries more fields; they stay inside).
 */

/** A refusal: its HTTP status (4xx, or 503) and what the body says. */
export interface Refusal {
  status: number
  code: string
  message: string
  /** `Retry-After` in seconds (a 429 of `limits`); a 503 without it says the default. */
  retryAfterSeconds?: number
  /** The run a refusal is about (`thread_busy`), sent in its body. */
  runId?: string
}

/** A refusal, frozen (every constant of this file is one). */
function defineRefusal(status: number, code: string, message: string): Readonly<Refusal> {
  return Object.freeze({ status, code, message })
}

/** A path no route of the handler serves: 404 `not_found`. */
export const NO_SUCH_ROUTE = defineRefusal(404, 'not_found', 'No such route')

/** A route asked with another method: 405 `method_not_allowed`. */
export const METHOD_NOT_ALLOWED = defineRefusal(405, 'method_not_allowed', 'Method not allowed')

/**
 * This replica is draining (a graceful shutdown): it starts and resumes nothing. 503
 * `replica_shutdown` with `Retry-After` ({@link refusalHeaders}); another replica takes the retry.
 */
export const REPLICA_SHUTDOWN = defineRefusal(
  ReplicaShutdownError.status,
  ReplicaShutdownError.code,
  new ReplicaShutdownError().message
)

/**
 * A body whose bytes as received pass `maxBytes`: 413 `body_too_large`, on every door's JSON
 * route of both transports (measured once, by the transport: the doors never re-measure).
 */
export function bodyTooLarge(maxBytes: number): Refusal {
  return refusalOf(new AgUiBodyTooLargeError(maxBytes))
}

/** A body that is not JSON (an empty one included, where the route needs one): 400 `invalid_input`. */
export const NOT_JSON = Object.freeze(refusalOf(new InvalidAgUiInputError('The body must be JSON')))

/** A body whose bytes are not UTF-8: 400 `invalid_input`. */
export const NOT_UTF8 = Object.freeze(
  refusalOf(new InvalidAgUiInputError('The body must be UTF-8 JSON'))
)

/**
 * A body that ended before it was whole (the client went away, or its connection failed,
 * mid-body): 400 `body_incomplete`. Nobody may be left to read it; the request ends there.
 */
export const BODY_INCOMPLETE = defineRefusal(
  400,
  'body_incomplete',
  'The request body ended before it was whole'
)

/**
 * The headers of a refusal: `Retry-After` when it says one (a 429 of `limits`) or on a 503 (a
 * draining replica), none otherwise.
 */
export function refusalHeaders(refusal: {
  status: number
  retryAfterSeconds?: number
}): Record<string, string> {
  if (refusal.retryAfterSeconds !== undefined) {
    return { 'Retry-After': String(refusal.retryAfterSeconds) }
  }
  return refusal.status === 503
    ? { 'Retry-After': String(ReplicaShutdownError.retryAfterSeconds) }
    : {}
}

/**
 * Send a refusal on an AdonisJS response (structural: this file stays free of
 * `@adonisjs/core/http`): its status, {@link refusalHeaders} and {@link refusalBody}.
 */
export function sendRefusal(
  response: {
    header(name: string, value: string): unknown
    status(code: number): { json(body: unknown): unknown }
  },
  refusal: Refusal
) {
  for (const [name, value] of Object.entries(refusalHeaders(refusal))) response.header(name, value)
  return response.status(refusal.status).json(refusalBody(refusal))
}

/**
 * The JSON body of a refusal: `{ code, message }`, and the run it is about when it names one
 * (`thread_busy`: `runId`), whatever else `refusal` carries.
 */
export function refusalBody(refusal: Refusal): { code: string; message: string; runId?: string } {
  const { code, message, runId } = refusal
  return runId === undefined ? { code, message } : { code, message, runId }
}

/** A refusal as a Fetch-API `Response`: `refusal.status`, `application/json` {@link refusalBody}. */
export function refusalResponse(refusal: Refusal): Response {
  return Response.json(refusalBody(refusal), {
    status: refusal.status,
    // The AdonisJS routes' `Content-Type`, byte for byte.
    headers: { 'Content-Type': 'application/json; charset=utf-8', ...refusalHeaders(refusal) },
  })
}

/**
 * A request for nobody where the app requires someone: 401 `unauthenticated`. The app's auth
 * middleware's refusal on a package JSON or SSE route (`host_refusals.ts`), and the Fetch
 * handlers' when `anonymous` is off.
 */
export const UNAUTHENTICATED = defineRefusal(401, 'unauthenticated', 'Sign in to use this route')

/**
 * A state-changing request without the page's CSRF token (or with an expired one), refused by
 * the app's `@adonisjs/shield`: 403 `invalid_csrf_token`. Nothing was read or changed.
 */
export const INVALID_CSRF_TOKEN = defineRefusal(
  403,
  'invalid_csrf_token',
  'Missing or expired CSRF token: send the page token in X-CSRF-TOKEN, or the XSRF-TOKEN cookie in X-XSRF-TOKEN'
)

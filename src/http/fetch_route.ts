import { requestCursor } from '../core/cursor.js'
import type { Principal } from '../core/run.js'
import type { RequestLimits } from './limits.js'
import { UNAUTHENTICATED, type Refusal } from './refusal.js'

/** The options every Fetch-API handler of the package takes. */
export interface FetchHandlerOptions {
  /** Where the handler's routes live, e.g. `/agent/agui` (no trailing slash). Default `''`. */
  basePath?: string
  /** Who a request acts for (the app's auth). Default: nobody (`null`). */
  principal?: (request: Request) => Principal | null | Promise<Principal | null>
  /**
   * Whether a request for nobody (`principal` gave `null`) may use the routes, as nobody (its
   * runs are then every anonymous caller's). Default true; false answers 401
   * `unauthenticated` (JSON `{ code, message }`, the AdonisJS routes' answer behind auth)
   * before the body is read.
   */
  anonymous?: boolean
  /** A `: ping` comment after this long without an event, in milliseconds. Default 15000. */
  heartbeatMs?: number
  /**
   * Cancel a run when the client of the response that drives it (the POST that starts or
   * continues it) goes away. Default: the door's own option (the AG-UI door's
   * `abortOnDisconnect`), else false (the run goes on; re-attach later).
   */
  abortOnDisconnect?: boolean
  /**
   * Per-principal limits on run starts and open streams (`createRequestLimits`; 429 with
   * `Retry-After` past one). Share one object between handlers: the counts are its own. Default:
   * none.
   */
  limits?: RequestLimits
}

/** What a Fetch-API handler reads of a request before its routes: the path, the cursor. */
export interface FetchRoute {
  /** The path under `basePath`, trailing slashes dropped: `''` for `basePath` itself. */
  path: string
  /** The re-attach cursor (`?after=` wins over `Last-Event-ID`; the one rule, `requestCursor`). */
  after: string | undefined
  /** The query string, a repeated parameter as an array ({@link searchQuery}). */
  query: Record<string, unknown>
}

/**
 * The path of `request` under `basePath` (trailing slashes ignored on both), and its cursor;
 * `null` when the path is not under `basePath` (the handler answers 404 `not_found`).
 */
export function fetchRoute(request: Request, basePath = ''): FetchRoute | null {
  const base = basePath.replace(/\/+$/, '')
  const url = new URL(request.url)
  if (!url.pathname.startsWith(base)) return null
  const path = url.pathname.slice(base.length).replace(/\/+$/, '')
  // `/agentx` is not under `/agent`.
  if (path !== '' && !path.startsWith('/')) return null
  return {
    path,
    after: requestCursor(url.searchParams.get('after'), request.headers.get('last-event-id')),
    query: searchQuery(url.searchParams),
  }
}

/**
 * Who `request` acts for: the handler's `principal` option, else nobody; refused (401
 * `unauthenticated`) for nobody when `anonymous` is off.
 */
export async function fetchPrincipal(
  request: Request,
  options: FetchHandlerOptions
): Promise<{ principal: Principal | null } | { refused: Refusal }> {
  const principal = (await options.principal?.(request)) ?? null
  if (principal === null && options.anonymous === false) return { refused: UNAUTHENTICATED }
  return { principal }
}

/** A URL's query as the routes take it: a repeated parameter as an array (a list refuses it). */
export function searchQuery(params: URLSearchParams): Record<string, unknown> {
  const query: Record<string, unknown> = {}
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key)
    query[key] = values.length === 1 ? values[0] : values
  }
  return query
}

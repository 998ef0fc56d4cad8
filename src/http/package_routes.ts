import type { HttpContext } from '@adonisjs/core/http'
import { answeringOutages } from './outage_refusal.js'

/** A route's handler function. */
export type Handler = (ctx: HttpContext) => unknown

/** A route's handler as the router takes it: a function, or a lazily imported controller's tuple. */
type RouteHandler = Handler | [unknown, string?]

/** What the package knows of one of its routes, for the guards that act before its handler. */
export interface PackageRoute {
  /**
   * The body it takes: `'json'` (read by the package itself, `body_guard.ts` and
   * `body_reader.ts`: the media-type rule, the cap, UTF-8 JSON; then the depth rule), the admin
   * page's `'form'` (the bodyparser's, with the depth rule), `'bytes'` (the raw body, any
   * content type, read by the package up to the cap: `bodyBytes`), or none.
   */
  body?: 'json' | 'form' | 'bytes'
  /** A JSON route that may take no body at all (a decision, a cancel): none reads as `{}`. */
  optionalBody?: boolean
  /**
   * Who reads its answers: `'json'` for `fetch`, `EventSource`, `HttpAgent` and `useChat` (a
   * refusal is JSON `{ code, message }`, never a redirect), `'page'` for a browser navigating
   * (the admin's HTML views: the app's own login redirect applies).
   */
  client: 'json' | 'page'
  /** The admin form's answer to a CSRF token the app's shield refused (a page with a notice). */
  csrfRefused?: (ctx: HttpContext) => unknown
  /**
   * A JSON body's cap in bytes as received (413 `body_too_large`: a declared `Content-Length`
   * above it before a byte is read). Default `DEFAULTS.maxBodyBytes` (1 MiB).
   */
  maxBodyBytes?: number
}

/** The raw bodies the body guard read, by request (a `'bytes'` route's). */
const rawBodies = new WeakMap<object, Uint8Array>()

/** Keep the raw body the body guard read for `ctx`'s route. */
export function keepBodyBytes(ctx: HttpContext, bytes: Uint8Array) {
  rawBodies.set(ctx.request, bytes)
}

/** The raw body of `ctx` a `'bytes'` route's guard read (empty when it read none). */
export function bodyBytes(ctx: HttpContext): Uint8Array {
  return rawBodies.get(ctx.request) ?? new Uint8Array()
}

/** The handlers of the package's routes (a function, or a controller's tuple), with what is known of each. */
const routes = new WeakMap<object, PackageRoute>()

/**
 * What identifies a route by its handler as the router stores it: the function itself, or the
 * tuple a lazily imported controller was given as (kept as the handler's `reference`).
 */
function keyOf(handler: unknown): object | undefined {
  if (typeof handler === 'function') return handler
  const reference = (handler as { reference?: unknown } | null | undefined)?.reference
  return Array.isArray(reference) ? reference : undefined
}

/**
 * Mark `handler` as one of the package's routes. Returns the handler for `router.get/post`: a
 * function answering an outage of the database itself (503 `database_unavailable`,
 * `outage_refusal.ts`); a lazily imported controller's tuple as it is (the controller does).
 */
export function packageRoute<T extends RouteHandler>(route: PackageRoute, handler: T): T {
  const served = (typeof handler === 'function' ? answeringOutages(handler) : handler) as T
  routes.set(served, route)
  return served
}

/**
 * Mark `handler` as a JSON route's (`{ client: 'json' }`) unless it is marked already: every
 * route of the package's group is one of its routes, a new one included.
 */
export function claimRoute(handler: unknown) {
  const key = keyOf(handler)
  if (key && !routes.has(key)) routes.set(key, { client: 'json' })
}

/** The package's route a request was routed to, or undefined for any other route. */
export function routeOf(ctx: HttpContext): PackageRoute | undefined {
  const key = keyOf(ctx.route?.handler)
  return key ? routes.get(key) : undefined
}

import type { HttpContext } from '@adonisjs/core/http'

type Handler = (ctx: HttpContext) => unknown

/** What the package knows of one of its routes, for the guards that act before its handler. */
export interface PackageRoute {
  /**
   * The body it takes: `'json'` (the media-type rule and the depth rule, `body_guard.ts`), the
   * admin page's `'form'` (the depth rule), or none.
   */
  body?: 'json' | 'form'
  /**
   * Who reads its answers: `'json'` for `fetch`, `EventSource`, `HttpAgent` and `useChat` (a
   * refusal is JSON `{ code, message }`, never a redirect), `'page'` for a browser navigating
   * (the admin's HTML views: the app's own login redirect applies).
   */
  client: 'json' | 'page'
  /** The admin form's answer to a CSRF token the app's shield refused (a page with a notice). */
  csrfRefused?: (ctx: HttpContext) => unknown
}

/** The handlers of the package's routes, with what is known of each. */
const routes = new WeakMap<Handler, PackageRoute>()

/** Mark `handler` as one of the package's routes. Returns the handler, for `router.get/post`. */
export function packageRoute<T extends Handler>(route: PackageRoute, handler: T): T {
  routes.set(handler, route)
  return handler
}

/**
 * Mark `handler` as a JSON route's (`{ client: 'json' }`) unless it is marked already: every
 * route of the package's group is one of its routes, a new one included.
 */
export function claimRoute(handler: unknown) {
  if (typeof handler === 'function' && !routes.has(handler as Handler)) {
    routes.set(handler as Handler, { client: 'json' })
  }
}

/** The package's route a request was routed to, or undefined for any other route. */
export function routeOf(ctx: HttpContext): PackageRoute | undefined {
  const handler = ctx.route?.handler
  return typeof handler === 'function' ? routes.get(handler as Handler) : undefined
}

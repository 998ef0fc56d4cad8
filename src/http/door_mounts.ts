import type { HttpContext } from '@adonisjs/core/http'
import type { DoorRoute, DoorRouteTable } from './door_routes.js'
import type { RequestLimits } from './limits.js'
import type { PrincipalResolver } from './principal.js'

/**
 * The door routes mounted on AdonisJS, by the handler tuple each was given to the router as
 * (`[DoorController, 'handle']`, one tuple per route: the router keeps it as the handler's
 * `reference`). The adapter (`adonis_adapter.ts`) writes here, the lazily imported controller
 * (`door_controller.ts`) reads: neither imports the other.
 */

/** The options of the AdonisJS adapter: the config's, for every door alike. */
export interface AdonisDoorOptions {
  /** Who a request acts for (config `principal`). */
  principal?: PrincipalResolver
  /** A `: ping` comment after this long without an event (config `agui.heartbeat`). */
  heartbeatMs?: number
  /**
   * Cancel a run when the client of the response that drives it goes away (config
   * `agui.abortOnDisconnect`, for every door). Default: the table's own, else false.
   */
  abortOnDisconnect?: boolean
  /** Per-principal limits (config `limits`): run starts and open streams. Default: none. */
  limits?: RequestLimits
}

/** A door route as mounted: its table, the route, the adapter's options and open responses. */
export interface MountedRoute {
  table: DoorRouteTable
  route: DoorRoute
  options: AdonisDoorOptions
  /** Count a streamed response as open (ended on shutdown) until the returned function runs. */
  track(controller: AbortController): () => void
}

const mounted = new WeakMap<object, MountedRoute>()

/** Record what `handler` (a route's handler tuple) serves. */
export function mountRoute(handler: object, route: MountedRoute) {
  mounted.set(handler, route)
}

/** The door route `ctx` was routed to, or undefined for any other route. */
export function mountedRoute(ctx: HttpContext): MountedRoute | undefined {
  const reference = (ctx.route?.handler as { reference?: unknown } | undefined)?.reference
  return typeof reference === 'object' && reference !== null ? mounted.get(reference) : undefined
}

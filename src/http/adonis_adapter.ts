import type { Route, Router } from '@adonisjs/core/http'
import type { DoorRoute, DoorRouteTable } from './door_routes.js'
import { mountRoute, type AdonisDoorOptions } from './door_mounts.js'
import { packageRoute } from './package_routes.js'

export type { AdonisDoorOptions } from './door_mounts.js'

/**
 * The methods a route answers: its own, and `HEAD` for a `GET` route unless the table has a
 * `HEAD` route of the same path (AdonisJS's `router.get` answers both).
 */
function methodsOf(route: DoorRoute, table: DoorRouteTable): string[] {
  if (route.method !== 'GET') return [route.method]
  const ownHead = table.routes.some((other) => other.method === 'HEAD' && other.path === route.path)
  return ownHead ? ['GET'] : ['GET', 'HEAD']
}

/** The door controller, imported at the first request of a door's route (as transmit v2 does). */
const DoorController = () => import('./door_controller.js')

/**
 * The one AdonisJS adapter of the doors: it mounts any door's route table on the app's router
 * (each route handled by the lazily imported `door_controller.ts`, which serves every route the
 * same way) and holds what outlives a request: the options, and the responses being streamed,
 * which {@link AdonisDoorAdapter.closeAll} ends on shutdown.
 */
export class AdonisDoorAdapter {
  /** Responses being streamed: ended on shutdown. */
  readonly #open = new Set<AbortController>()

  constructor(readonly options: AdonisDoorOptions = {}) {}

  /**
   * Mount `table`'s routes at `base` (e.g. `/agui`), inside the caller's group, each named as the
   * table says. Returns the routes, in the table's order.
   */
  mount(router: Router, base: string, table: DoorRouteTable): Route[] {
    return table.routes.map((route) => {
      const handler: [typeof DoorController, 'handle'] = [DoorController, 'handle']
      mountRoute(handler, {
        table,
        route,
        options: this.options,
        track: (controller) => this.track(controller),
      })
      const marked = packageRoute(
        route.body
          ? {
              body: route.body,
              client: 'json',
              maxBodyBytes: table.maxBodyBytes,
              optionalBody: route.optionalBody,
            }
          : { client: 'json' },
        handler
      )
      const path = `${base}${route.path}` || '/'
      return router.route(path, methodsOf(route, table), marked).as(route.name)
    })
  }

  /** Count `controller`'s response as open until the returned function is called. */
  track(controller: AbortController): () => void {
    this.#open.add(controller)
    return () => this.#open.delete(controller)
  }

  /** End every response being streamed (the shutdown calls it): readers re-attach elsewhere. */
  closeAll() {
    for (const controller of this.#open) controller.abort()
  }
}

import type { DialectDoors } from '../durable_streams/dialects/index.js'
import { durableChatRouteTable } from './durable_chat_routes.js'
import { durableDialectRouteTable, type DialectReadRules } from './durable_dialect_routes.js'
import { createDoorFetchHandler } from './fetch_adapter.js'
import type { FetchHandlerOptions } from './fetch_route.js'

/** Options of {@link durableDialectsFetchHandler}: the Fetch handlers' and the read path's. */
export interface DurableDialectsFetchHandlerOptions extends FetchHandlerOptions {
  read?: DialectReadRules
}

/**
 * Every run's and thread's stream as a Durable Stream (`durable_dialect_routes.ts`) and the AI
 * SDK transport on it (`durable_chat_routes.ts`), as a Fetch-API handler under `basePath`: the
 * same route tables as `<prefix>/ds` of `registerRoutes`, through the one Fetch adapter.
 */
export function durableDialectsFetchHandler(
  doors: DialectDoors,
  options: DurableDialectsFetchHandlerOptions = {}
) {
  return createDoorFetchHandler(
    [durableDialectRouteTable(doors, options.read), durableChatRouteTable(doors)],
    options
  )
}

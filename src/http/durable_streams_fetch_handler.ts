import type { DurableStreamsOptions } from '../durable_streams/write/door.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { durableStreamsDoor, durableStreamsRouteTable } from './durable_streams_routes.js'
import { createDoorFetchHandler } from './fetch_adapter.js'
import type { FetchHandlerOptions } from './fetch_route.js'

/** Options of {@link createDurableStreamsFetchHandler}: the Fetch handlers' and the door's. */
export interface DurableStreamsFetchHandlerOptions
  extends FetchHandlerOptions, DurableStreamsOptions {}

/**
 * The Durable Streams door (PROTOCOL.md: create, append, close, delete, HEAD, catch-up,
 * long-poll, SSE) as a Fetch-API handler, `(request: Request) => Promise<Response>`, on the
 * streams of `sink`'s database, under `basePath`: a stream `<basePath>/v1/stream/<name>`.
 * The same door as the AdonisJS routes' `<prefix>/ds` (`registerRoutes`).
 */
export function createDurableStreamsFetchHandler(
  sink: LucidTokenStreamSink,
  options: DurableStreamsFetchHandlerOptions = {}
) {
  const door = durableStreamsDoor(sink, options)
  return createDoorFetchHandler([durableStreamsRouteTable(door)], options)
}

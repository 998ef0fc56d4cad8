import type { DurableStreamsOptions } from '../durable_streams/write/door.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { durableStreamsDoor, durableStreamsRouteTable } from './durable_streams_routes.js'
import { createDoorFetchHandler } from './fetch_adapter.js'
import type { DialectDoors } from '../durable_streams/dialects/index.js'
import { durableChatRouteTable } from './durable_chat_routes.js'
import { durableDialectRouteTable } from './durable_dialect_routes.js'
import type { FetchHandlerOptions } from './fetch_route.js'

/** Options of {@link createDurableStreamsFetchHandler}: the Fetch handlers' and the door's. */
export interface DurableStreamsFetchHandlerOptions
  extends FetchHandlerOptions, DurableStreamsOptions {
  /** Aborted when the server shuts down: the subscriptions' sweep (a timer) stops. */
  closing?: AbortSignal
  /**
   * Both doors (`createRuntime`'s `door` and `uiMessage`) and the projection's rules (the
   * `agui` options): every run's and thread's stream is served too (`/runs/:runId/<dialect>`,
   * `/threads/:threadId/<dialect>`, `durable_dialect_routes.ts`), and the AI SDK transport
   * (`/chat`, `durable_chat_routes.ts`).
   */
  dialects?: DialectDoors
}

/**
 * The Durable Streams door (PROTOCOL.md: create, append, close, delete, HEAD, catch-up,
 * long-poll, SSE) as a Fetch-API handler, `(request: Request) => Promise<Response>`, on the
 * streams of `sink`'s database, under `basePath`: a stream `<basePath>/v1/stream/<name>`.
 * With `dialects`, every run's and thread's stream too, read-only, and the AI SDK transport.
 * The same door as the AdonisJS routes' `<prefix>/ds` (`registerRoutes`).
 */
export function createDurableStreamsFetchHandler(
  sink: LucidTokenStreamSink,
  options: DurableStreamsFetchHandlerOptions = {}
) {
  const door = durableStreamsDoor(sink, options, options.closing)
  const tables = [durableStreamsRouteTable(door)]
  if (options.dialects) {
    tables.push(
      durableDialectRouteTable(options.dialects, options),
      durableChatRouteTable(options.dialects)
    )
  }
  return createDoorFetchHandler(tables, options)
}

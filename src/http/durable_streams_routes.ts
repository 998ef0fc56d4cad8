import { DurableStore } from '../store/durable_store.js'
import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { DurableStreamsDoor, type DurableStreamsOptions } from '../durable_streams/write/door.js'
import type { DoorRoute, DoorRouteTable } from './door_routes.js'
import { subscriptionRoutes } from './ds_subscription_routes.js'

/** A body's cap on the write path unless configured (base64 in a `mediumtext` row stays under 16 MiB). */
const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024

/**
 * The Durable Streams door of `sink`'s database: streams stored as the sink's streams (a row of
 * its streams table, its appends `data` rows of its frames table), their readers woken by the
 * sink's notifiers (this replica's tail: local commits, NOTIFY, Redis) and a poll.
 */
export function durableStreamsDoor(
  sink: LucidTokenStreamSink,
  options: DurableStreamsOptions = {},
  closing?: AbortSignal
) {
  const internals = sinkInternals(sink)
  const store = new DurableStore(() => internals.client, sink.tables, {
    channel: internals.store.notifyChannel,
    committed: (runId, rev) => {
      internals.store.committed?.(runId, rev)
      internals.tail.wake(runId, rev)
    },
  })
  return new DurableStreamsDoor(
    store,
    {
      tail: internals.tail,
      rev: async (runId) => {
        const head = await store.head(runId)
        return head?.rev ?? null
      },
      pollMs: sink.options.pollIntervalMs,
    },
    options,
    closing
  )
}

/**
 * The Durable Streams door's route table: every method of the protocol on `/v1/stream/*` (the
 * stream's path is what follows the door's base: `/v1/stream/<name>`), raw bodies up to
 * `maxBodyBytes` (413).
 */
export function durableStreamsRouteTable(
  door: DurableStreamsDoor,
  maxBodyBytes = door.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
): DoorRouteTable {
  const route = (
    method: DoorRoute['method'],
    name: string,
    extra: Partial<DoorRoute> = {}
  ): DoorRoute => ({
    method,
    path: '/v1/stream/*',
    name: `ds.stream.${name}`,
    ...extra,
    answer: (request) => door.answer(`/v1/stream/${request.params['*']}`, request),
  })
  return {
    routes: [
      // The reserved `__ds` control APIs first: never taken for streams (PROTOCOL.md 6).
      ...(door.subscriptions ? subscriptionRoutes(door.subscriptions, '/v1/stream') : []),
      route('GET', 'read', { streams: true }),
      route('HEAD', 'head'),
      route('PUT', 'create', { body: 'bytes' }),
      route('POST', 'append', { body: 'bytes' }),
      route('DELETE', 'delete'),
      route('OPTIONS', 'preflight'),
    ],
    maxBodyBytes,
    cancel: () => {},
  }
}

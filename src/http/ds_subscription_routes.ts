import type { DoorRequest, DoorRoute, RawAnswer } from './door_routes.js'
import type {
  DsSubscriptions,
  SubscriptionAnswer,
} from '../durable_streams/subscriptions/service.js'
import type { ReservedUrls } from '../durable_streams/subscriptions/wakes.js'

/** Headers of every answer of the reserved APIs. */
const HEADERS = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }

function raw(answer: SubscriptionAnswer): RawAnswer {
  if (answer.body === undefined) return { kind: 'raw', status: answer.status, headers: HEADERS }
  return {
    kind: 'raw',
    status: answer.status,
    headers: { ...HEADERS, 'Content-Type': 'application/json' },
    body: JSON.stringify(answer.body),
  }
}

/** `{stream-url}` as the request names it: everything before its reserved `/__ds/` part. */
function urlsOf(request: DoorRequest): ReservedUrls {
  const url = new URL(request.url)
  const at = url.pathname.indexOf('/__ds/')
  return { root: `${url.origin}${at < 0 ? url.pathname : url.pathname.slice(0, at)}` }
}

/** A request's bearer token (callback, ack, release). */
function bearer(request: DoorRequest): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')
  return match?.[1]
}

/**
 * The reserved subscription APIs (PROTOCOL.md 6-7) as door routes under `root` (the streams'
 * root, e.g. `/v1/stream`): mounted before the streams' own routes, so `__ds` paths are never
 * taken for streams.
 */
export function subscriptionRoutes(subscriptions: DsSubscriptions, root: string): DoorRoute[] {
  const at = `${root}/__ds/subscriptions/:id`
  const route = (
    method: DoorRoute['method'],
    path: string,
    name: string,
    answer: (request: DoorRequest) => Promise<SubscriptionAnswer>,
    body = false
  ): DoorRoute => ({
    method,
    path,
    name: `ds.subscriptions.${name}`,
    ...(body ? { body: 'json' as const } : {}),
    answer: async (request) => raw(await answer(request)),
  })
  return [
    {
      method: 'GET',
      path: `${root}/__ds/jwks.json`,
      name: 'ds.jwks',
      answer: async () => ({
        kind: 'raw',
        status: 200,
        headers: {
          'Content-Type': 'application/jwk-set+json',
          'Cache-Control': 'public, max-age=300',
          'X-Content-Type-Options': 'nosniff',
        },
        body: JSON.stringify(subscriptions.signing.jwks()),
      }),
    },
    route(
      'PUT',
      at,
      'put',
      (r) => subscriptions.put(r.params.id, r.body, r.principal, urlsOf(r)),
      true
    ),
    route('GET', at, 'show', (r) => subscriptions.get(r.params.id, r.principal, urlsOf(r))),
    route('DELETE', at, 'delete', (r) => subscriptions.delete(r.params.id, r.principal)),
    route(
      'POST',
      `${at}/streams`,
      'streams.add',
      (r) => subscriptions.addStreams(r.params.id, r.body, r.principal),
      true
    ),
    route('DELETE', `${at}/streams/*`, 'streams.remove', (r) =>
      subscriptions.removeStream(r.params.id, r.params['*'], r.principal)
    ),
    route(
      'POST',
      `${at}/callback`,
      'callback',
      (r) => subscriptions.ack(r.params.id, bearer(r), r.body, urlsOf(r)),
      true
    ),
    route(
      'POST',
      `${at}/claim`,
      'claim',
      (r) => subscriptions.claim(r.params.id, r.body, r.principal, urlsOf(r)),
      true
    ),
    route(
      'POST',
      `${at}/ack`,
      'ack',
      (r) => subscriptions.ack(r.params.id, bearer(r), r.body, urlsOf(r)),
      true
    ),
    route(
      'POST',
      `${at}/release`,
      'release',
      (r) => subscriptions.release(r.params.id, bearer(r), r.body, urlsOf(r)),
      true
    ),
  ]
}

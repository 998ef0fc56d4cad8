import {
  matchPath,
  routeNeeds,
  type DoorAnswer,
  type DoorRoute,
  type DoorRouteTable,
} from './door_routes.js'
import { discardBody, readBytesBody, readJsonBody } from './body_reader.js'
import { fetchPrincipal, fetchRoute, type FetchHandlerOptions } from './fetch_route.js'
import { streamResponse } from './fetch_stream.js'
import { answeringOutagesFetch } from './outage_refusal.js'
import { admit, type Admission } from './limits.js'
import { METHOD_NOT_ALLOWED, NO_SUCH_ROUTE, refusalResponse } from './refusal.js'

/** A request's route among the tables: the table, the route, its decoded parameters. */
interface Matched {
  table: DoorRouteTable
  route: DoorRoute
  params: Record<string, string>
}

/**
 * Doors' route tables as one Fetch-API handler, `(request: Request) => Promise<Response>`, for
 * any server that speaks the Fetch API (Hono, Next.js route handlers, Bun, Deno, or Node through
 * an adapter); each table's paths under `basePath`. The one Fetch adapter: every door it serves
 * gets every option and rule alike, in this order:
 *
 * 1. the route: 404 `not_found` for a path no table has (also a malformed `%` escape), 405
 *    `method_not_allowed` for a path asked with another method;
 * 2. who asks (`principal`; 401 `unauthenticated` for nobody with `anonymous: false`), before
 *    a byte of the body is read;
 * 3. on a JSON route, the body (`body_reader.ts`, the one reader of both transports): 415
 *    `unsupported_media_type`, 413 `body_too_large` (the table's `maxBodyBytes`, the bytes as
 *    received), 400 `body_incomplete` (its stream failed: the client went away mid-body), 400
 *    `invalid_input` (not UTF-8, not JSON);
 * 4. the per-principal limits (`limits`, `limits.ts`): 429 `too_many_run_starts` /
 *    `too_many_streams` with `Retry-After`, before the door acts;
 * 5. the door's answer: a refusal as JSON `{ code, message }` (its status; `Retry-After` on a
 *    503), 204, JSON, or a stream (`fetch_stream.ts`: pulled as the client reads, heartbeats
 *    every `heartbeatMs` on SSE, ended when the request's `signal` aborts; its stream slot
 *    given back when it ends). When the client of a route that drives its run goes away, the
 *    run is cancelled if `abortOnDisconnect` (the option, else the table's) is on.
 *
 * An outage of the database before the stream opens is 503 `database_unavailable` with
 * `Retry-After` (`outage_refusal.ts`, the AdonisJS routes' answer too).
 */
export function createDoorFetchHandler(
  tables: DoorRouteTable[],
  options: FetchHandlerOptions = {}
): (request: Request) => Promise<Response> {
  return async function handle(request: Request): Promise<Response> {
    try {
      // An outage of the database: a read tried once more, else 503 `database_unavailable`.
      return await answeringOutagesFetch(request, answerRequest)
    } finally {
      // A body left unread (refused before it, or a route that reads none) is discarded, so a
      // client still sending it reads the answer instead of a reset connection.
      if (!request.bodyUsed) discardBody(request.body)
    }
  }

  async function answerRequest(request: Request): Promise<Response> {
    const asked = fetchRoute(request, options.basePath)
    if (!asked) return refusalResponse(NO_SUCH_ROUTE)
    const found = matchRoute(tables, asked.path, request.method)
    if (!found.matched) return refusalResponse(found.known ? METHOD_NOT_ALLOWED : NO_SUCH_ROUTE)
    const matched = found.matched
    const { table, route, params } = matched
    const caller = await fetchPrincipal(request, options)
    if ('refused' in caller) return refusalResponse(caller.refused)
    let body: unknown
    if (route.body === 'json') {
      const read = await readJsonBody(
        {
          contentType: request.headers.get('content-type'),
          contentLength: request.headers.get('content-length'),
          bytes: request.body,
        },
        { maxBytes: table.maxBodyBytes, optional: route.optionalBody }
      )
      if ('refused' in read) return refusalResponse(read.refused)
      body = read.value
    }
    let bytes: Uint8Array | undefined
    if (route.body === 'bytes') {
      const read = await readBytesBody(
        { contentLength: request.headers.get('content-length'), bytes: request.body },
        table.maxBodyBytes
      )
      if ('refused' in read) return refusalResponse(read.refused)
      bytes = read.bytes
    }
    const limited = await admit(options.limits, caller.principal, routeNeeds(route))
    if ('refused' in limited) return refusalResponse(limited.refused)
    const { admitted } = limited
    let answer: DoorAnswer
    try {
      answer = await route.answer({
        params,
        query: asked.query,
        after: asked.after,
        accept: request.headers.get('accept') ?? undefined,
        headers: Object.fromEntries(request.headers.entries()),
        method: request.method,
        url: request.url,
        principal: caller.principal,
        body,
        bytes,
        signal: request.signal,
      })
    } catch (error) {
      admitted.release()
      throw error
    }
    // Only a stream keeps its slot, until it ends.
    if (answer.kind !== 'stream') admitted.release()
    const abort = route.drives && (options.abortOnDisconnect ?? table.abortOnDisconnect ?? false)
    const response = fetchAnswer(
      answer,
      request,
      options,
      admitted,
      abort ? table.cancel : undefined
    )
    // A HEAD answered by a GET route: its status and headers, never its body.
    if (request.method === 'HEAD' && response.body) {
      void response.body.cancel().catch(() => {})
      return new Response(null, { status: response.status, headers: response.headers })
    }
    return response
  }
}

/**
 * The route of `path` asked with `method` among the tables (a `HEAD` is a `GET` route's unless
 * some table has a `HEAD` route for the path), and whether any route has the path (`known`: 405
 * rather than 404).
 */
function matchRoute(
  tables: DoorRouteTable[],
  path: string,
  method: string
): { matched?: Matched; known: boolean } {
  let known = false
  let matched: Matched | undefined
  let asGet: Matched | undefined
  for (const table of tables) {
    for (const route of table.routes) {
      const params = matchPath(route.path, path)
      if (!params) continue
      known = true
      if (route.method === method) matched ??= { table, route, params }
      if (method === 'HEAD' && route.method === 'GET') asGet ??= { table, route, params }
    }
  }
  return { matched: matched ?? asGet, known }
}

/** An answer as a `Response`; `cancel` the stream's run if its client goes away. */
function fetchAnswer(
  answer: DoorAnswer,
  request: Request,
  options: FetchHandlerOptions,
  admitted: Admission,
  cancel?: (streamRunId: string) => void
): Response {
  switch (answer.kind) {
    case 'refused':
      return refusalResponse(answer)
    case 'none':
      return new Response(null, { status: 204 })
    case 'json':
      return Response.json(answer.body, { status: answer.status ?? 200, headers: answer.headers })
    case 'raw':
      // As `Response` takes it: the DOM lib's narrower `BodyInit` (a page's program) too.
      return new Response((answer.body ?? null) as ConstructorParameters<typeof Response>[0], {
        status: answer.status,
        headers: answer.headers,
      })
    case 'stream': {
      const { streamRunId } = answer
      return streamResponse(answer.chunks, request, {
        heartbeatMs: options.heartbeatMs,
        contentType: answer.contentType,
        headers: answer.headers,
        onDisconnect: cancel && streamRunId ? () => cancel(streamRunId) : undefined,
        onEnd: () => admitted.release(),
      })
    }
  }
}

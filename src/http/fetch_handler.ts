import type { AgUiDoor, AgUiReply } from '../agui/door/index.js'
import { INPUT_LIMITS } from '../agui/door/input.js'
import { agUiChunks, agUiContentType, wantsProtobuf } from './agui_encoding.js'
import { readJsonBody } from './fetch_body.js'
import { fetchPrincipal, fetchRoute, pathSegment, type FetchHandlerOptions } from './fetch_route.js'
import { streamResponse } from './fetch_stream.js'
import { METHOD_NOT_ALLOWED, NO_SUCH_ROUTE, refusalResponse } from './refusal.js'
import { ThreadList } from '../store/thread_list.js'
import { threadPageResponse } from './thread_page.js'

/** Options of {@link createAgUiFetchHandler}: `basePath`, `principal`, `heartbeatMs`. */
export interface AgUiFetchHandlerOptions extends FetchHandlerOptions {}

/**
 * The AG-UI door as a Fetch-API handler, `(request: Request) => Promise<Response>`, for any
 * server that speaks the Fetch API (Hono, Next.js route handlers, Bun, Deno, or Node through an
 * adapter). It serves the same routes as the AdonisJS controller, under `basePath`:
 *
 * | method | path | what |
 * | --- | --- | --- |
 * | POST | `/` | `RunAgentInput` (JSON) in, the run as SSE out (a new run or a resume) |
 * | GET | `/runs/:runId` | re-attach (`?after=` or `Last-Event-ID`) |
 * | GET | `/threads` | the caller's threads, newest first (`?limit=&cursor=`): `{ threads, next }` |
 * | GET | `/threads/:threadId` | the thread's current run |
 *
 * Refusals before the stream are JSON `{ code, message }`: 401 `unauthenticated` (nobody, with `anonymous: false`), 404 `not_found` (also for other
 * paths), 405 `method_not_allowed`, 413 `body_too_large`, 415 `unsupported_media_type` (a body
 * that is not `application/json`: a cross-site form cannot start anything), 400 `invalid_input`
 * / `invalid_cursor`, and the door's own; the list answers 401 `unauthenticated` without a
 * principal and 422 `invalid_query` for a bad `limit` or `cursor` (`thread_page.ts`). The body is pulled only as the client reads
 * (backpressure); the request's `signal` ends the stream when the client goes away
 * (`fetch_stream.ts`).
 */
export function createAgUiFetchHandler(door: AgUiDoor, options: AgUiFetchHandlerOptions = {}) {
  const maxBodyBytes = door.options.maxBodyBytes ?? INPUT_LIMITS.maxBodyBytes
  const threads = new ThreadList(door.runs.connect, door.runs.tables)
  return async function handle(request: Request): Promise<Response> {
    const route = fetchRoute(request, options.basePath)
    if (!route) return refusalResponse(NO_SUCH_ROUTE)
    const { path, after } = route
    if (path === '/threads') {
      if (request.method !== 'GET') return refusalResponse(METHOD_NOT_ALLOWED)
      const caller = await fetchPrincipal(request, options)
      if ('refused' in caller) return refusalResponse(caller.refused)
      return threadPageResponse(threads, request, caller.principal, 'agui')
    }
    const run = /^\/runs\/([^/]+)$/.exec(path)
    const thread = /^\/threads\/([^/]+)$/.exec(path)
    let reply: AgUiReply
    if (path === '') {
      if (request.method !== 'POST') return refusalResponse(METHOD_NOT_ALLOWED)
      const caller = await fetchPrincipal(request, options)
      if ('refused' in caller) return refusalResponse(caller.refused)
      const { principal } = caller
      const body = await readJsonBody(request, maxBodyBytes)
      if ('refused' in body) return refusalResponse(body.refused)
      reply = await door.run(body.value, principal, request.signal)
    } else if (run || thread) {
      if (request.method !== 'GET') return refusalResponse(METHOD_NOT_ALLOWED)
      const id = pathSegment((run ?? thread)![1])
      if (id === null) return refusalResponse(NO_SUCH_ROUTE)
      const caller = await fetchPrincipal(request, options)
      if ('refused' in caller) return refusalResponse(caller.refused)
      const { principal } = caller
      reply = run
        ? await door.reattach(id, after, principal, request.signal)
        : await door.attachThread(id, after, principal, request.signal)
    } else {
      return refusalResponse(NO_SUCH_ROUTE)
    }
    if (reply.kind === 'refused') return refusalResponse(reply)
    const protobuf = wantsProtobuf(request.headers.get('accept'))
    return streamResponse(agUiChunks(reply.events, protobuf), request, {
      heartbeatMs: options.heartbeatMs,
      ...(protobuf ? { contentType: agUiContentType(true) } : {}),
    })
  }
}

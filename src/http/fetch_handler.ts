import type { AgUiDoor } from '../agui/door/index.js'
import { ThreadList } from '../store/thread_list.js'
import { agUiRouteTable } from './agui_routes.js'
import { createDoorFetchHandler } from './fetch_adapter.js'
import type { FetchHandlerOptions } from './fetch_route.js'

/**
 * Options of {@link createAgUiFetchHandler}: `basePath`, `principal`, `anonymous`,
 * `heartbeatMs`, `abortOnDisconnect` (default: the door's `abortOnDisconnect`).
 */
export interface AgUiFetchHandlerOptions extends FetchHandlerOptions {}

/**
 * The AG-UI door as a Fetch-API handler, `(request: Request) => Promise<Response>`, for any
 * server that speaks the Fetch API (Hono, Next.js route handlers, Bun, Deno, or Node through an
 * adapter). It serves the door's route table (`agui_routes.ts`) under `basePath`, through the
 * one Fetch adapter (`fetch_adapter.ts`), with the same rules as the AdonisJS routes:
 *
 * | method | path | what |
 * | --- | --- | --- |
 * | POST | `/` | `RunAgentInput` (JSON) in, the run as SSE out (a new run or a resume) |
 * | GET | `/runs/:runId` | re-attach (`?after=` or `Last-Event-ID`) |
 * | GET | `/threads` | the caller's threads, newest first (`?limit=&cursor=`): `{ threads, next }` |
 * | GET | `/threads/:threadId` | the thread's current run |
 *
 * Refusals before the stream are JSON `{ code, message }`: 401 `unauthenticated` (nobody, with
 * `anonymous: false`), 404 `not_found` (also for other paths), 405 `method_not_allowed`, 413
 * `body_too_large` (the door's `maxBodyBytes`, the bytes as received), 415
 * `unsupported_media_type` (a body that is not `application/json`: a cross-site form cannot
 * start anything), 400 `invalid_input` (not UTF-8 JSON, or the door's rules) / `invalid_cursor`,
 * 400 `body_incomplete` (the body's stream failed before its end), and the door's own; the
 * list answers 401 `unauthenticated` without a principal and 422 `invalid_query` for a bad
 * `limit` or `cursor` (`thread_page.ts`). The body is pulled only as the client reads (backpressure); the
 * request's `signal` ends the stream when the client goes away (`fetch_stream.ts`), and cancels
 * the run of a `POST` when `abortOnDisconnect` is on.
 */
export function createAgUiFetchHandler(door: AgUiDoor, options: AgUiFetchHandlerOptions = {}) {
  const threads = new ThreadList(door.runs.connect, door.runs.tables)
  return createDoorFetchHandler([agUiRouteTable(door, threads)], options)
}

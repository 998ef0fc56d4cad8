import type { UiMessageDoor } from '../ui_message/door/index.js'
import { ThreadList } from '../store/thread_list.js'
import { createDoorFetchHandler } from './fetch_adapter.js'
import type { FetchHandlerOptions } from './fetch_route.js'
import { uiMessageRouteTable } from './ui_message_routes.js'

/**
 * Options of {@link createUiMessageFetchHandler}: `basePath`, `principal`, `anonymous`,
 * `heartbeatMs`, `abortOnDisconnect` (default false).
 */
export interface UiMessageFetchHandlerOptions extends FetchHandlerOptions {}

/**
 * The `useChat` door (the AI SDK UI message stream) as a Fetch-API handler,
 * `(request: Request) => Promise<Response>`, for any server that speaks the Fetch API (Hono,
 * Next.js route handlers, Bun, Deno, or Node through an adapter). It serves the door's route
 * table (`ui_message_routes.ts`) under `basePath`, through the one Fetch adapter
 * (`fetch_adapter.ts`), with the same rules as the AdonisJS routes:
 *
 * | method | path | what |
 * | --- | --- | --- |
 * | GET | `/chat` | the caller's chats, newest first (`?limit=&cursor=`): `{ chats, next }` |
 * | POST | `/chat` | `DefaultChatTransport`'s body (JSON) in, the turn as SSE out |
 * | GET | `/chat/:chatId/stream` | its `reconnectToStream`: the active turn (`?after=` or `Last-Event-ID`); 204 when none |
 * | GET | `/chat/:chatId/messages` | the chat's stored `UIMessage[]` (JSON), for `useChat({ messages })` |
 *
 * A stream is `text/event-stream` with `x-vercel-ai-ui-message-stream: v1`, `data: <chunk>` per
 * UI message chunk (with its `id:` cursor), then `data: [DONE]`. Refusals before the stream are
 * JSON `{ code, message }`, nothing written: 401 `unauthenticated` (nobody, with `anonymous:
 * false`), 404 `not_found` (another principal's chat, and other paths), 405
 * `method_not_allowed`, 415 `unsupported_media_type` (a body that is not `application/json`: a
 * cross-site form starts nothing), 413 `body_too_large` (the door's `maxBodyBytes`, default 1
 * MiB, read no further), 400 `invalid_input` (naming the rule, e.g. `maxDepth` for a body nested
 * deeper than `MAX_JSON_DEPTH`) / `invalid_cursor` / `body_incomplete` (the body's stream failed
 * before its end), 409, 422 and the decision errors with their
 * status (`UiMessageDoor.chat`); the list answers 401 `unauthenticated` without a principal and
 * 422 `invalid_query` for a bad `limit` or `cursor`. The body is pulled only as the client reads
 * (backpressure); the request's `signal` ends the stream when the client goes away, and cancels
 * the turn's run of a `POST` when `abortOnDisconnect` is on.
 */
export function createUiMessageFetchHandler(
  door: UiMessageDoor,
  options: UiMessageFetchHandlerOptions = {}
) {
  const chats = new ThreadList(door.runs.connect, door.runs.tables)
  return createDoorFetchHandler([uiMessageRouteTable(door, chats)], options)
}

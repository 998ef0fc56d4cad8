import type { UiDoorReply, UiMessageDoor } from '../ui_message/door/index.js'
import { CHAT_LIMITS } from '../ui_message/door/index.js'
import { readJsonBody } from './fetch_body.js'
import { fetchPrincipal, fetchRoute, pathSegment, type FetchHandlerOptions } from './fetch_route.js'
import { streamResponse } from './fetch_stream.js'
import { METHOD_NOT_ALLOWED, NO_SUCH_ROUTE, refusalResponse } from './refusal.js'
import { UI_MESSAGE_STREAM_HEADER, uiMessageSse } from './ui_message_encoding.js'
import { ThreadList } from '../store/thread_list.js'
import { threadPageResponse } from './thread_page.js'

/** Options of {@link createUiMessageFetchHandler}: `basePath`, `principal`, `heartbeatMs`. */
export interface UiMessageFetchHandlerOptions extends FetchHandlerOptions {}

/**
 * The `useChat` door (the AI SDK UI message stream) as a Fetch-API handler,
 * `(request: Request) => Promise<Response>`, for any server that speaks the Fetch API (Hono,
 * Next.js route handlers, Bun, Deno, or Node through an adapter). It serves the same routes and
 * rules as the AdonisJS controller (`ui_message_controller.ts`), under `basePath`:
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
 * JSON `{ code, message }`, nothing written: 404 `not_found` (another principal's chat, and other
 * paths), 405 `method_not_allowed`, 415 `unsupported_media_type` (a body that is not
 * `application/json`: a cross-site form starts nothing), 413 `body_too_large` (the door's
 * `maxBodyBytes`, default 1 MiB, read no further), 400 `invalid_input` (naming the rule, e.g.
 * `maxDepth` for a body nested deeper than `MAX_JSON_DEPTH`) / `invalid_cursor`, 409, 422 and the
 * decision errors with their status (`UiMessageDoor.chat`); the list answers 401
 * `unauthenticated` without a principal and 422 `invalid_query` for a bad `limit` or `cursor`. The body is pulled only as the client
 * reads (backpressure); the request's `signal` ends the stream when the client goes away.
 */
export function createUiMessageFetchHandler(
  door: UiMessageDoor,
  options: UiMessageFetchHandlerOptions = {}
) {
  const maxBodyBytes = door.options.maxBodyBytes ?? CHAT_LIMITS.maxBodyBytes
  const chats = new ThreadList(door.runs.connect, door.runs.tables)
  return async function handle(request: Request): Promise<Response> {
    const route = fetchRoute(request, options.basePath)
    if (!route) return refusalResponse(NO_SUCH_ROUTE)
    const resume = /^\/chat\/([^/]+)\/stream$/.exec(route.path)
    const stored = /^\/chat\/([^/]+)\/messages$/.exec(route.path)
    if (stored) {
      if (request.method !== 'GET') return refusalResponse(METHOD_NOT_ALLOWED)
      const chatId = pathSegment(stored[1])
      if (chatId === null) return refusalResponse(NO_SUCH_ROUTE)
      const caller = await fetchPrincipal(request, options)
      if ('refused' in caller) return refusalResponse(caller.refused)
      const answer = await door.messages(chatId, caller.principal)
      if (answer.kind === 'messages') return Response.json(answer.messages)
      if (answer.kind === 'refused') return refusalResponse(answer)
      return new Response(null, { status: 204 })
    }
    let reply: UiDoorReply
    if (route.path === '/chat' && request.method === 'GET') {
      const caller = await fetchPrincipal(request, options)
      if ('refused' in caller) return refusalResponse(caller.refused)
      return threadPageResponse(chats, request, caller.principal, 'chat')
    } else if (route.path === '/chat') {
      if (request.method !== 'POST') return refusalResponse(METHOD_NOT_ALLOWED)
      const caller = await fetchPrincipal(request, options)
      if ('refused' in caller) return refusalResponse(caller.refused)
      const { principal } = caller
      const body = await readJsonBody(request, maxBodyBytes)
      if ('refused' in body) return refusalResponse(body.refused)
      reply = await door.chat(body.value, principal, request.signal)
    } else if (resume) {
      if (request.method !== 'GET') return refusalResponse(METHOD_NOT_ALLOWED)
      const chatId = pathSegment(resume[1])
      if (chatId === null) return refusalResponse(NO_SUCH_ROUTE)
      const caller = await fetchPrincipal(request, options)
      if ('refused' in caller) return refusalResponse(caller.refused)
      const { principal } = caller
      reply = await door.resume(chatId, route.after, principal, request.signal)
    } else {
      return refusalResponse(NO_SUCH_ROUTE)
    }
    if (reply.kind === 'refused') return refusalResponse(reply)
    if (reply.kind === 'none') return new Response(null, { status: 204 })
    return streamResponse(uiMessageSse(reply.events), request, {
      heartbeatMs: options.heartbeatMs,
      headers: UI_MESSAGE_STREAM_HEADER,
    })
  }
}

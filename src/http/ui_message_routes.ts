import type { UiMessageDoor } from '../ui_message/door/index.js'
import { DEFAULTS } from '../defaults.js'
import type { ThreadList } from '../store/thread_list.js'
import { streamAnswer, type DoorRouteTable } from './door_routes.js'
import { threadPageAnswer } from './thread_page.js'
import { latestRunOf, stopRoute } from './stop_route.js'
import { UI_MESSAGE_STREAM_HEADER, uiMessageSse } from './ui_message_encoding.js'

/**
 * The `useChat` door's routes (the AI SDK UI message stream), under its base (the
 * `registerRoutes` prefix, `basePath` for `createUiMessageFetchHandler`):
 *
 * | method | path | name | what |
 * | --- | --- | --- | --- |
 * | GET | `/chat` | `chat.list` | the caller's chats, newest first (`?limit=&cursor=`): `{ chats, next }` |
 * | POST | `/chat` | `chat.send` | `DefaultChatTransport`'s body (JSON) in, the turn out; drives the run |
 * | GET | `/chat/:chatId/stream` | `chat.resume` | its `reconnectToStream`: the active turn (`?after=` or `Last-Event-ID`); 204 when none |
 * | GET | `/chat/:chatId/messages` | `chat.messages` | the chat's stored `UIMessage[]` (JSON), for `useChat({ messages })`; 204 when none |
 * | POST | `/chat/:chatId/stop` | `chat.stop` | stop the chat's current turn, talking or parked (`{ mode? }`: `keep` or `rollback`) |
 *
 * A stream is SSE with `x-vercel-ai-ui-message-stream: v1`, `data: <chunk>` per UI message chunk
 * (with its `id:` cursor), then `data: [DONE]` (`ui_message_encoding.ts`). It uses the door's
 * public methods only: `chat`, `resume`, `messages`, and its driver to cancel a run whose client
 * went away (`abortOnDisconnect`).
 */
export function uiMessageRouteTable(door: UiMessageDoor, chats: ThreadList): DoorRouteTable {
  const encode = <R extends { events: Parameters<typeof uiMessageSse>[0] }>(reply: R) => ({
    chunks: uiMessageSse(reply.events),
    headers: { ...UI_MESSAGE_STREAM_HEADER },
  })
  return {
    maxBodyBytes: door.options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
    cancel: (streamRunId) => void door.driver.abort(streamRunId),
    routes: [
      {
        method: 'GET',
        path: '/chat',
        name: 'chat.list',
        answer: ({ query, principal }) => threadPageAnswer(chats, query, principal, 'chat'),
      },
      {
        method: 'POST',
        path: '/chat',
        name: 'chat.send',
        body: 'json',
        drives: true,
        streams: true,
        answer: async ({ body, principal, signal }) =>
          streamAnswer(await door.chat(body, principal, signal), encode),
      },
      {
        method: 'GET',
        path: '/chat/:chatId/stream',
        name: 'chat.resume',
        streams: true,
        answer: async ({ params, after, principal, signal }) =>
          streamAnswer(await door.resume(params.chatId, after, principal, signal), encode),
      },
      stopRoute(door, { path: '/chat/:chatId/stop', name: 'chat.stop' }, (request) =>
        latestRunOf(door, request, request.params.chatId)
      ),
      {
        method: 'GET',
        path: '/chat/:chatId/messages',
        name: 'chat.messages',
        answer: async ({ params, principal }) => {
          const reply = await door.messages(params.chatId, principal)
          if (reply.kind === 'messages') return { kind: 'json', body: reply.messages }
          return reply.kind === 'refused' ? reply : { kind: 'none' }
        },
      },
    ],
  }
}

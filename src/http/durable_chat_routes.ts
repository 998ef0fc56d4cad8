import { START } from '../core/cursor.js'
import { currentSegment, type DialectDoors } from '../durable_streams/dialects/index.js'
import { DEFAULTS } from '../defaults.js'
import type { UiDoorReply } from '../ui_message/door/index.js'
import type { DoorAnswer, DoorRouteTable } from './door_routes.js'
import { segmentPath } from './durable_dialect_routes.js'

/**
 * The AI SDK transport of Durable Streams (`@durable-streams/aisdk-transport`'s
 * `createDurableChatTransport({ api: '<base>/chat' })`) on the useChat door, under the Durable
 * Streams door's base:
 *
 * | method | path | what |
 * | --- | --- | --- |
 * | POST | `/chat` | the transport's body (`{ id, messages, trigger, messageId, ...body }`, what `DefaultChatTransport` sends) to the door's `chat`: 201 `{ streamUrl }` with `Location`, the segment the door answers with as a Durable Stream of UI message chunks |
 * | GET | `/chat/:chatId/stream` | its reconnect: the door's `resume` (the chat's active turn from its start): 200 `{ streamUrl }` with `Location`; 204 when none |
 *
 * Every rule is the door's (`UiMessageDoor.chat` and `resume`: refusals with their status and
 * `{ code, message }`, decisions, busy threads); the answer's chunks are not sent on the
 * request: the run goes on without it (it is the driver's), and the stream named is read
 * through the read path (`durable_dialect_routes.ts`, `uiSegmentSource`), from the position the
 * door's answer starts at to the end of the segment the stream is in (a park, or the finish).
 * Locations are relative to the request's URL (resolved by the transport, RFC 9110 10.2.2).
 */
export function durableChatRouteTable(doors: DialectDoors): DoorRouteTable {
  const door = doors.uiMessage
  const located = async (reply: UiDoorReply, up: string, status: number): Promise<DoorAnswer> => {
    if (reply.kind !== 'stream') return reply
    const streamRunId = reply.streamRunId
    if (!streamRunId) return { kind: 'none' }
    const after = await currentSegment(doors, streamRunId)
    const url = `${up}${segmentPath(streamRunId, reply.from ?? START, after)}`
    return {
      kind: 'raw',
      status,
      headers: {
        'Location': url,
        'Content-Type': 'application/json; charset=utf-8',
        'Cache-Control': 'no-store',
        'Access-Control-Expose-Headers': 'Location',
      },
      body: JSON.stringify({ streamUrl: url }),
    }
  }
  return {
    maxBodyBytes: door.options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
    cancel: (streamRunId) => void door.driver.abort(streamRunId),
    routes: [
      {
        method: 'POST',
        path: '/chat',
        name: 'ds.chat.send',
        body: 'json',
        // A run start of `limits.runStarts`; its answer is no stream, so no client going away
        // cancels the run (`abortOnDisconnect` applies to streamed answers only).
        drives: true,
        answer: async ({ body, principal }) => located(await door.chat(body, principal), '', 201),
      },
      {
        method: 'GET',
        path: '/chat/:chatId/stream',
        name: 'ds.chat.resume',
        answer: async ({ params, principal }) =>
          located(await door.resume(params.chatId, undefined, principal), '../../', 200),
      },
    ],
  }
}

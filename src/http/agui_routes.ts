import type { AgUiDoor } from '../agui/door/index.js'
import { DEFAULTS } from '../defaults.js'
import type { ThreadList } from '../store/thread_list.js'
import { agUiChunks, agUiContentType, wantsProtobuf } from './agui_encoding.js'
import { streamAnswer, type DoorRouteTable } from './door_routes.js'
import { threadPageAnswer } from './thread_page.js'
import { latestRunOf, stopRoute } from './stop_route.js'

/**
 * The AG-UI door's routes, under its base (`/agui` in `registerRoutes`, `basePath` for
 * `createAgUiFetchHandler`):
 *
 * | method | path | name | what |
 * | --- | --- | --- | --- |
 * | POST | `` | `agui.run` | `RunAgentInput` (JSON) in, the run out (a new run or a resume); drives the run |
 * | GET | `/runs/:runId` | `agui.reattach` | re-attach (`?after=` or `Last-Event-ID`) |
 * | GET | `/threads` | `agui.threads` | the caller's threads, newest first (`?limit=&cursor=`): `{ threads, next }` |
 * | GET | `/threads/:threadId` | `agui.attach` | the thread's current run (`connect(threadId)`), same cursors |
 * | POST | `/threads/:threadId/stop` | `agui.stop` | stop the thread's current run, talking or parked (`{ mode? }`: `keep` or `rollback`) |
 * | POST | `/runs/:runId/stop` | `agui.stopRun` | stop that run (the same body and answers) |
 *
 * Events are AG-UI SSE (`id:` on every event after the join prelude), or AG-UI's length-prefixed
 * protobuf when `Accept` names exactly `application/vnd.ag-ui.event+proto` (`agui_encoding.ts`).
 * It uses the door's public methods only: `run`, `reattach`, `attachThread`, and its driver to
 * cancel a run whose client went away (`abortOnDisconnect`).
 */
export function agUiRouteTable(door: AgUiDoor, threads: ThreadList): DoorRouteTable {
  const encode = (accept: string | undefined) => {
    const protobuf = wantsProtobuf(accept)
    return <R extends { events: Parameters<typeof agUiChunks>[0] }>(reply: R) => ({
      chunks: agUiChunks(reply.events, protobuf),
      ...(protobuf ? { contentType: agUiContentType(true) } : {}),
    })
  }
  return {
    maxBodyBytes: door.options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
    abortOnDisconnect: door.options.abortOnDisconnect,
    cancel: (streamRunId) => void door.driver.abort(streamRunId),
    routes: [
      stopRoute(door, { path: '/threads/:threadId/stop', name: 'agui.stop' }, (request) =>
        latestRunOf(door, request, request.params.threadId)
      ),
      stopRoute(
        door,
        { path: '/runs/:runId/stop', name: 'agui.stopRun' },
        async (request) => request.params.runId
      ),
      {
        method: 'POST',
        path: '',
        name: 'agui.run',
        body: 'json',
        drives: true,
        streams: true,
        answer: async (request) =>
          streamAnswer(
            await door.run(request.body, request.principal, request.signal),
            encode(request.accept)
          ),
      },
      {
        method: 'GET',
        path: '/runs/:runId',
        name: 'agui.reattach',
        streams: true,
        answer: async ({ params, after, principal, signal, accept }) =>
          streamAnswer(await door.reattach(params.runId, after, principal, signal), encode(accept)),
      },
      {
        method: 'GET',
        path: '/threads',
        name: 'agui.threads',
        answer: ({ query, principal }) => threadPageAnswer(threads, query, principal, 'agui'),
      },
      {
        method: 'GET',
        path: '/threads/:threadId',
        name: 'agui.attach',
        streams: true,
        answer: async ({ params, after, principal, signal, accept }) =>
          streamAnswer(
            await door.attachThread(params.threadId, after, principal, signal),
            encode(accept)
          ),
      },
    ],
  }
}

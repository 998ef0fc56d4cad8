import type { AgUiDoor, AgUiReply } from '../agui/door/index.js'
import {
  clientProfile,
  declaredProfile,
  CLIENT_VERSION_HEADER,
  DEFAULT_CLIENT_VERSION,
  type ClientProfile,
} from '../agui/compat/index.js'
import type { Refused } from '../door/reply.js'
import { DEFAULTS } from '../defaults.js'
import type { ThreadList } from '../store/thread_list.js'
import { agUiChunks, agUiContentType, wantsProtobuf } from './agui_encoding.js'
import {
  streamAnswer,
  type DoorAnswer,
  type DoorRequest,
  type DoorRouteTable,
} from './door_routes.js'
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
 * protobuf when `Accept` names exactly `application/vnd.ag-ui.event+proto` (`agui_encoding.ts`),
 * each as the requesting client can parse it: the `X-AG-UI-Client-Version` header, else the
 * door's `clientVersion` (default `0.0.57`), picks the profile (`src/agui/compat/`); a header
 * that is not a version, or sent twice with two versions, is refused (400
 * `invalid_client_version`) before the door is asked.
 * It uses the door's public methods only: `run`, `reattach`, `attachThread`, and its driver to
 * cancel a run whose client went away (`abortOnDisconnect`).
 *
 * @throws TypeError when the door's `clientVersion` is not a version
 */
export function agUiRouteTable(door: AgUiDoor, threads: ThreadList): DoorRouteTable {
  const fallback = clientProfile(door.options.clientVersion ?? DEFAULT_CLIENT_VERSION)
  if (!fallback) throw new TypeError('"agui.clientVersion" must be a version such as 0.0.57')
  /** The profile the request declares (its header), else the door's; a refusal for a bad one. */
  const profileOf = (request: DoorRequest): ClientProfile | Refused => {
    const declared = request.headers[CLIENT_VERSION_HEADER]
    if (declared === undefined) return fallback
    const profile = declaredProfile(declared)
    if (profile === 'invalid') return INVALID_CLIENT_VERSION
    return profile === 'conflicting' ? CONFLICTING_CLIENT_VERSION : profile
  }
  /** Serve `request` with `reply`: its profile checked first (nothing asked of a refused one). */
  const served = async (
    request: DoorRequest,
    reply: () => Promise<AgUiReply>
  ): Promise<DoorAnswer> => {
    const profile = profileOf(request)
    if ('kind' in profile) return profile
    const protobuf = wantsProtobuf(request.accept)
    return streamAnswer(await reply(), (stream) => ({
      chunks: agUiChunks(stream.events, protobuf, profile),
      ...(protobuf ? { contentType: agUiContentType(true) } : {}),
    }))
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
        answer: (request) =>
          served(request, () => door.run(request.body, request.principal, request.signal)),
      },
      {
        method: 'GET',
        path: '/runs/:runId',
        name: 'agui.reattach',
        streams: true,
        answer: (request) =>
          served(request, () => {
            const { params, after, principal, signal } = request
            return door.reattach(params.runId, after, principal, signal)
          }),
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
        answer: (request) =>
          served(request, () => {
            const { params, after, principal, signal } = request
            return door.attachThread(params.threadId, after, principal, signal)
          }),
      },
    ],
  }
}

/** A `X-AG-UI-Client-Version` header that is not a version (the value is not echoed). */
const INVALID_CLIENT_VERSION: Refused = {
  kind: 'refused',
  status: 400,
  code: 'invalid_client_version',
  message: 'X-AG-UI-Client-Version must be an @ag-ui/client version such as 0.0.57 or 1.0.0',
}

/** A `X-AG-UI-Client-Version` header sent more than once, with different versions. */
const CONFLICTING_CLIENT_VERSION: Refused = {
  kind: 'refused',
  status: 400,
  code: 'invalid_client_version',
  message:
    'X-AG-UI-Client-Version was sent more than once with different versions: declare the one @ag-ui/client version the page runs',
}

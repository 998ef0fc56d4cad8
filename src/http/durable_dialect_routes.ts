import { isRunId } from '../core/frames.js'
import { ownedBy } from '../core/owner.js'
import type { Principal } from '../core/run.js'
import { formatOffset, parseOffset } from '../durable_streams/protocol/offset.js'
import {
  DIALECTS,
  runStream,
  segmentStream,
  threadStream,
  type Dialect,
  type DialectDoors,
} from '../durable_streams/dialects/index.js'
import { dsRefusal, preflightAnswer } from '../durable_streams/read/headers.js'
import { serveHead, serveRead, type ReadRules } from '../durable_streams/read/serve.js'
import type { DurableSource } from '../durable_streams/source.js'
import { DEFAULTS } from '../defaults.js'
import type { DoorAnswer, DoorRequest, DoorRoute, DoorRouteTable } from './door_routes.js'

/** The read path's settings for the dialect streams (`ReadRules` but the stream's id). */
export type DialectReadRules = Omit<ReadRules, 'id'>

/**
 * The Durable Streams of runs and threads, read-only, under the door's base (`<prefix>/ds` in
 * `registerRoutes`, `basePath` of `createDurableStreamsFetchHandler`):
 *
 * | method | path | what |
 * | --- | --- | --- |
 * | GET, HEAD | `/runs/:runId/frames` | the run's stored frames (the native route's projection) |
 * | GET, HEAD | `/runs/:runId/agui` | the run's AG-UI events (the AG-UI door's) |
 * | GET, HEAD | `/runs/:runId/ui-message` | the run's UI message chunks (the useChat door's) |
 * | GET, HEAD | `/threads/:threadId/frames\|agui\|ui-message` | the thread's turns, in order |
 * | GET, HEAD | `/runs/:runId/ui-message/segments/:from/:after` | one segment of a turn (the AI SDK transport's, `durable_chat_routes.ts`) |
 *
 * Each read is the one read path's (`serveRead`, `serveHead`: catch-up, long-poll, SSE,
 * `offset=now`, ETag). Owner-only: a missing run or thread and another principal's are the same
 * 404. `POST`, `PUT`, `DELETE`: 405 (read-only streams, PROTOCOL.md section 3); `OPTIONS`: the
 * protocol's CORS preflight.
 */
export function durableDialectRouteTable(
  doors: DialectDoors,
  rules: DialectReadRules = {}
): DoorRouteTable {
  const routes: DoorRoute[] = []
  for (const dialect of DIALECTS) {
    routes.push(
      ...streamRoutes(`/runs/:runId/${dialect}`, `ds.runs.${dialect}`, rules, (request) =>
        runOf(doors, dialect, request.params.runId, request.principal)
      ),
      ...streamRoutes(`/threads/:threadId/${dialect}`, `ds.threads.${dialect}`, rules, (request) =>
        threadOf(doors, dialect, request.params.threadId, request.principal)
      )
    )
  }
  routes.push(
    ...streamRoutes(
      '/runs/:runId/ui-message/segments/:from/:after',
      'ds.runs.segment',
      rules,
      (request) => segmentOf(doors, request)
    )
  )
  return {
    routes,
    maxBodyBytes: DEFAULTS.maxBodyBytes,
    cancel: () => {},
  }
}

/** What a request's stream is: its source and its id (the path), or a refusal. */
type Found = { source: DurableSource; id: string } | null

/** A stream's routes: GET and HEAD read it, the writes are 405, OPTIONS the preflight. */
function streamRoutes(
  path: string,
  name: string,
  rules: DialectReadRules,
  find: (request: DoorRequest) => Promise<Found>
): DoorRoute[] {
  const read = (method: 'GET' | 'HEAD'): DoorRoute => ({
    method,
    path,
    name: method === 'GET' ? name : `${name}.head`,
    streams: method === 'GET',
    answer: async (request): Promise<DoorAnswer> => {
      const found = await find(request)
      if (!found) return dsRefusal(404, 'not_found', 'No such stream.')
      if (method === 'HEAD') return serveHead(found.source, { id: found.id })
      return serveRead(found.source, request, { ...rules, id: found.id, cache: 'private' })
    },
  })
  const refused = (method: 'POST' | 'PUT' | 'DELETE'): DoorRoute => ({
    method,
    path,
    name: `${name}.${method.toLowerCase()}`,
    answer: async () =>
      dsRefusal(405, 'method_not_allowed', 'This stream is read-only.', {
        Allow: 'GET, HEAD, OPTIONS',
      }),
  })
  return [
    read('GET'),
    read('HEAD'),
    refused('POST'),
    refused('PUT'),
    refused('DELETE'),
    { method: 'OPTIONS', path, name: `${name}.options`, answer: async () => preflightAnswer() },
  ]
}

/** The run `runId` that owns its stream, the principal's (the kernel's ownership rule). */
async function ownRun(doors: DialectDoors, runId: string, principal: Principal | null) {
  const run = isRunId(runId) ? await doors.agui.runs.find(runId) : null
  if (!run || run.streamRunId !== runId || !ownedBy(run, principal)) return null
  return (await doors.agui.sink.head(runId)) ? run : null
}

async function runOf(
  doors: DialectDoors,
  dialect: Dialect,
  runId: string,
  principal: Principal | null
): Promise<Found> {
  if (!(await ownRun(doors, runId, principal))) return null
  return { source: runStream(doors, dialect, runId), id: `runs/${runId}/${dialect}` }
}

async function threadOf(
  doors: DialectDoors,
  dialect: Dialect,
  threadId: string,
  principal: Principal | null
): Promise<Found> {
  const latest = isRunId(threadId) ? await doors.agui.runs.latest(threadId) : null
  if (!latest || !ownedBy(latest, principal)) return null
  return { source: threadStream(doors, dialect, threadId), id: `threads/${threadId}/${dialect}` }
}

const SEQ = /^(0|[1-9][0-9]{0,14})$/

async function segmentOf(doors: DialectDoors, request: DoorRequest): Promise<Found> {
  const { runId, from, after } = request.params
  const asked = parseOffset(from)
  if (!asked || !('cursor' in asked) || from !== formatOffset(asked.cursor)) return null
  if (!SEQ.test(after)) return null
  if (!(await ownRun(doors, runId, request.principal))) return null
  const source = segmentStream(doors, runId, asked.cursor, Number(after))
  return { source, id: `runs/${runId}/ui-message/segments/${from}/${after}` }
}

/** The path of a turn's segment stream under the door's base (`segmentOf`'s). */
export function segmentPath(
  runId: string,
  from: Parameters<typeof formatOffset>[0],
  after: number
) {
  return `runs/${encodeURIComponent(runId)}/ui-message/segments/${formatOffset(from)}/${after}`
}

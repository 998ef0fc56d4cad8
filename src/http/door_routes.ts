import type { Principal } from '../core/run.js'
import type { DoorReply, Refused } from '../door/reply.js'
import type { Chunk } from './agui_encoding.js'
import type { LimitNeeds } from './limits.js'

/**
 * A door's route table: what each of its routes is (method, path, whether it reads a JSON body,
 * whether its response drives the run) and what it answers, in the transport's terms (a JSON
 * body, nothing, or a stream of wire chunks), never how a transport reads or writes it. One
 * AdonisJS adapter (`adonis_adapter.ts`, `door_controller.ts`) and one Fetch-API adapter
 * (`fetch_adapter.ts`) serve every table alike: principal, cursor, media type, body cap,
 * heartbeats, abort on disconnect, refusals. A new door adds its table; the adapters do not
 * change.
 */

/** What a door's route is asked, as the adapter read and checked it. */
export interface DoorRequest {
  /** The route's path parameters (`:runId`), decoded. */
  params: Record<string, string>
  /** The query string; a repeated parameter as an array. */
  query: Record<string, unknown>
  /** The cursor to serve from: `?after=` wins over `Last-Event-ID` (`requestCursor`). */
  after: string | undefined
  /** The request's `Accept` header (AG-UI's protobuf is asked for there). */
  accept: string | undefined
  /** Who asks (the app's resolver), `null` for nobody. */
  principal: Principal | null
  /** The parsed JSON body, on a route that reads one (`body: 'json'`); else `undefined`. */
  body: unknown
  /** The raw body, on a route that reads bytes (`body: 'bytes'`, any content type); else `undefined`. */
  bytes?: Uint8Array
  /** The request's headers, by lower-case name (a repeated one joined with `, `). */
  headers: Record<string, string | undefined>
  /** The method asked (`HEAD` is answered by a `GET` route unless the table has its own). */
  method: string
  /** The request's whole URL as the client asked it (origin, path, query). */
  url: string
  /** Aborts when the client goes away or the replica closes its responses: the stream ends. */
  signal: AbortSignal
}

/** A stream to send: wire chunks, their content type (default SSE) and the protocol's headers. */
export interface StreamAnswer {
  kind: 'stream'
  chunks: AsyncGenerator<Chunk>
  /** Not SSE (AG-UI protobuf): this content type, and no heartbeat. */
  contentType?: string
  headers?: Record<string, string>
  /** The stream the events come from (what `abortOnDisconnect` cancels). */
  streamRunId?: string
}

/** A JSON answer (a list, stored messages): its status (default 200), body and headers. */
export interface JsonAnswer {
  kind: 'json'
  status?: number
  body: unknown
  headers?: Record<string, string>
}

/**
 * An answer whose status, headers and body the door sets itself (the Durable Streams door: its
 * protocol's status codes and headers on every answer, a refusal's too). No body on a `HEAD`.
 */
export interface RawAnswer {
  kind: 'raw'
  status: number
  headers: Record<string, string>
  body?: string | Uint8Array
}

/** What a door's route answers: a refusal, nothing (204), JSON, raw bytes, or a stream. */
export type DoorAnswer = Refused | { kind: 'none' } | JsonAnswer | RawAnswer | StreamAnswer

/** One route of a door. */
export interface DoorRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD' | 'OPTIONS'
  /**
   * Under the door's base, in AdonisJS's syntax (`/runs/:runId`); `''` is the base itself. A
   * last segment `*` matches one or more segments: `params['*']` is the rest of the path, each
   * segment decoded, joined with `/`.
   */
  path: string
  /** Its name in `registerRoutes` (`agui.run`), which prefixes it with its `as`. */
  name: string
  /**
   * `'json'`: it reads a JSON body (the media-type rule, 415, and the body cap, 413, apply);
   * `'bytes'`: it reads the raw body, any content type, up to the cap (413).
   */
  body?: 'json' | 'bytes'
  /** Its body may be left out (a stop): none reads as `undefined`. */
  optionalBody?: boolean
  /**
   * Its response drives the run (the POST that starts or continues it): `abortOnDisconnect`,
   * and a run start of `limits.runStarts`.
   */
  drives?: boolean
  /** Its answer may be a stream: it holds one of the principal's `limits.streams` while open. */
  streams?: boolean
  answer(request: DoorRequest): Promise<DoorAnswer>
}

/** A door's routes, with what the adapters need of the door itself. */
export interface DoorRouteTable {
  routes: DoorRoute[]
  /** The cap on a body's bytes as received, JSON or raw (413 `body_too_large` above). */
  maxBodyBytes: number
  /** Whether a driving response's disconnect cancels its run unless the transport says. */
  abortOnDisconnect?: boolean
  /** Cancel a run whose driving client went away (`abortOnDisconnect`). */
  cancel(streamRunId: string): void
}

/** What a route asks of the per-principal limits (`limits.ts`), on both transports alike. */
export function routeNeeds(route: DoorRoute): LimitNeeds {
  return { runStart: route.drives === true, stream: route.streams === true }
}

/**
 * A door's reply as an answer: a refusal or nothing as they are, a stream's events as the wire
 * chunks `encode` writes (with the stream's headers).
 */
export function streamAnswer<E>(
  reply: DoorReply<E>,
  encode: (reply: Extract<DoorReply<E>, { kind: 'stream' }>) => Omit<StreamAnswer, 'kind'>
): DoorAnswer {
  if (reply.kind !== 'stream') return reply
  return { kind: 'stream', streamRunId: reply.streamRunId, ...encode(reply) }
}

/**
 * The parameters of `path` when it is `pattern`'s (`/runs/:runId` against `/runs/r1`), each
 * decoded; `null` when it is not, or when a parameter is a malformed escape (`%zz`).
 */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/')
  const got = path.split('/')
  const rest = want.at(-1) === '*'
  if (rest ? got.length < want.length : want.length !== got.length) return null
  const params: Record<string, string> = {}
  try {
    for (const [index, part] of want.entries()) {
      if (rest && index === want.length - 1) {
        const tail = got.slice(index)
        if (tail.some((segment) => segment === '')) return null
        params['*'] = tail.map((segment) => decodeURIComponent(segment)).join('/')
        break
      }
      if (!part.startsWith(':')) {
        if (part !== got[index]) return null
        continue
      }
      if (got[index] === '') return null
      params[part.slice(1)] = decodeURIComponent(got[index])
    }
  } catch {
    return null
  }
  return params
}

import { requestCursor } from '../core/cursor.js'
import { DEFAULTS } from '../defaults.js'
import type { Principal } from '../core/run.js'
import type { AgUiDoor, DoorReply } from '../agui/door/index.js'
import { INPUT_LIMITS } from '../agui/door/input.js'
import { agUiChunks, agUiContentType, wantsProtobuf } from './agui_encoding.js'
import { mediaTypeRefusal } from './media_type.js'

/** Options of {@link createAgUiFetchHandler}. */
export interface AgUiFetchHandlerOptions {
  /** Where the AG-UI routes live, e.g. `/agent/agui` (no trailing slash). Default `''`. */
  basePath?: string
  /** Who a request acts for (the app's auth). Default: nobody (`null`). */
  principal?: (request: Request) => Principal | null | Promise<Principal | null>
  /** A `: ping` comment after this long without an event, in milliseconds. Default 15000. */
  heartbeatMs?: number
}

const SSE_HEADERS = {
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
}

const json = (status: number, body: { code: string; message: string }) =>
  Response.json(body, { status })

/**
 * The AG-UI door as a Fetch-API handler, `(request: Request) => Promise<Response>`, for any
 * server that speaks the Fetch API (Hono, Next.js route handlers, Bun, Deno, or Node through an
 * adapter). It serves the same routes as the AdonisJS controller, under `basePath`:
 *
 * | method | path | what |
 * | --- | --- | --- |
 * | POST | `/` | `RunAgentInput` (JSON) in, the run as SSE out (a new run or a resume) |
 * | GET | `/runs/:runId` | re-attach (`?after=` or `Last-Event-ID`) |
 * | GET | `/threads/:threadId` | the thread's current run |
 *
 * Refusals before the stream are JSON `{ code, message }`: 404 `not_found` (also for other
 * paths), 405 `method_not_allowed`, 413 `body_too_large`, 415 `unsupported_media_type` (a body
 * that is not `application/json`: a cross-site form cannot start anything), 400 `invalid_input`
 * / `invalid_cursor`. The body is pulled only as the client reads (backpressure); the request's
 * `signal` ends the stream when the client goes away.
 */
export function createAgUiFetchHandler(door: AgUiDoor, options: AgUiFetchHandlerOptions = {}) {
  const base = (options.basePath ?? '').replace(/\/+$/, '')
  const maxBodyBytes = door.options.maxBodyBytes ?? INPUT_LIMITS.maxBodyBytes
  return async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url)
    if (!url.pathname.startsWith(base)) return json(404, NOT_FOUND)
    const path = url.pathname.slice(base.length).replace(/\/+$/, '')
    const principal = (await options.principal?.(request)) ?? null
    const after = requestCursor(url.searchParams.get('after'), request.headers.get('last-event-id'))
    const run = /^\/runs\/([^/]+)$/.exec(path)
    const thread = /^\/threads\/([^/]+)$/.exec(path)
    let reply: DoorReply
    if (path === '') {
      if (request.method !== 'POST') return json(405, METHOD)
      const body = await readJson(request, maxBodyBytes)
      if ('refused' in body) return json(body.status, body.refused)
      reply = await door.run(body.value, principal, request.signal)
    } else if (run || thread) {
      if (request.method !== 'GET') return json(405, METHOD)
      const id = decodeURIComponent((run ?? thread)![1])
      reply = run
        ? await door.reattach(id, after, principal, request.signal)
        : await door.attachThread(id, after, principal, request.signal)
    } else {
      return json(404, NOT_FOUND)
    }
    if (reply.kind === 'refused') return json(reply.status, reply)
    const protobuf = wantsProtobuf(request.headers.get('accept'))
    const body = byteStream(agUiChunks(reply.events, protobuf), protobuf, options, request)
    return new Response(body, {
      headers: { 'Content-Type': agUiContentType(protobuf), ...SSE_HEADERS },
    })
  }
}

const NOT_FOUND = { code: 'not_found', message: 'No such route' }
const METHOD = { code: 'method_not_allowed', message: 'Method not allowed' }

/**
 * The JSON body, read no further than the cap. `JSON.parse` does not recurse on the stack, so a
 * deeply nested body parses here and is refused by the door's depth rule (`validateAgUiInput`).
 */
async function readJson(
  request: Request,
  max: number
): Promise<{ value: unknown } | { status: number; refused: { code: string; message: string } }> {
  const wrongType = mediaTypeRefusal(request.headers.get('content-type'))
  if (wrongType) {
    return {
      status: wrongType.status,
      refused: { code: wrongType.code, message: wrongType.message },
    }
  }
  const tooLarge = {
    status: 413,
    refused: { code: 'body_too_large', message: `The body exceeds ${max} bytes` },
  }
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (declared > max) return tooLarge
  const parts: Uint8Array[] = []
  let size = 0
  for await (const part of request.body ?? []) {
    size += part.byteLength
    if (size > max) return tooLarge
    parts.push(part)
  }
  try {
    return { value: JSON.parse(Buffer.concat(parts).toString('utf8')) }
  } catch {
    return { status: 400, refused: { code: 'invalid_input', message: 'The body must be JSON' } }
  }
}

/**
 * Requests whose response is streaming. A `Request`'s signal follows the one it was made with
 * only while the `Request` is reachable (undici links them weakly): each is kept here until its
 * stream ends, so a client that goes away always ends its reader.
 */
const streaming = new Set<Request>()

/**
 * The chunks as a byte stream, pulled as the client reads (one chunk queued ahead at most), with
 * a heartbeat while idle (SSE) that is skipped while the queue is full: a client that does not
 * read gets nothing queued for it. When the request's signal aborts (the client went away), the
 * chunks are closed even if nobody cancels the stream: a reader waiting on a full socket lets go
 * of what it holds.
 */
function byteStream(
  chunks: AsyncGenerator<string | Uint8Array>,
  protobuf: boolean,
  options: AgUiFetchHandlerOptions,
  request: Request
) {
  const encoder = new TextEncoder()
  const heartbeatMs = options.heartbeatMs ?? DEFAULTS.heartbeatMs
  let timer: NodeJS.Timeout | undefined
  let lastWrite = Date.now()
  const { signal } = request
  streaming.add(request)
  const stop = async () => {
    clearInterval(timer)
    signal.removeEventListener('abort', onAbort)
    streaming.delete(request)
    await chunks.return(undefined)
  }
  const onAbort = () => void stop().catch(() => {})
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (!protobuf) timer = heartbeat(controller)
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
    },
    async pull(controller) {
      let next: IteratorResult<string | Uint8Array>
      try {
        next = await chunks.next()
      } catch (error) {
        await stop().catch(() => {})
        throw error
      }
      lastWrite = Date.now()
      if (next.done) {
        await stop()
        controller.close()
        return
      }
      controller.enqueue(typeof next.value === 'string' ? encoder.encode(next.value) : next.value)
    },
    async cancel() {
      await stop()
    },
  })

  function heartbeat(controller: ReadableStreamDefaultController<Uint8Array>) {
    const interval = setInterval(
      () => {
        if (Date.now() - lastWrite < heartbeatMs || (controller.desiredSize ?? 0) <= 0) return
        lastWrite = Date.now()
        try {
          controller.enqueue(encoder.encode(': ping\n\n'))
        } catch {
          clearInterval(interval)
        }
      },
      Math.max(10, Math.floor(heartbeatMs / 2))
    )
    interval.unref?.()
    return interval
  }
}

import type { HttpContext } from '@adonisjs/core/http'
import { cursorOf } from './cursor_of.js'
import { routeNeeds, type DoorAnswer } from './door_routes.js'
import { admit } from './limits.js'
import { mountedRoute, type MountedRoute } from './door_mounts.js'
import { resolvePrincipal } from './principal.js'
import { answeringOutages } from './outage_refusal.js'
import { sendRefusal } from './refusal.js'
import { bodyBytes } from './package_routes.js'
import { serveChunks } from './sse.js'

/**
 * Every door's routes on AdonisJS: the one controller the adapter (`adonis_adapter.ts`) mounts
 * each door route with, imported lazily at the first request. It serves any route of any door's
 * table the same way, in this order:
 *
 * 1. on a JSON route, the body as the body guard read it before the app's bodyparser
 *    (`body_guard.ts`, the reader of both transports, `body_reader.ts`: 415, 413 above the
 *    table's cap, 400 `body_incomplete` / `invalid_input`, all answered there);
 * 2. who asks (config `principal`);
 * 3. the per-principal limits (config `limits`, `limits.ts`): 429 `too_many_run_starts` /
 *    `too_many_streams` with `Retry-After`, before the door acts;
 * 4. the door's answer: a refusal as JSON `{ code, message }` (`Retry-After` on a 503), 204,
 *    JSON, or a stream (`sse.ts`: heartbeats, backpressure, the framework's headers kept), from
 *    the cursor (`?after=` wins over `Last-Event-ID`). The stream ends when its client goes away
 *    or the replica shuts down (`AdonisDoorAdapter.closeAll`), and gives its stream slot back;
 *    a client going away from a route that drives its run cancels the run when
 *    `abortOnDisconnect` is on.
 *
 * An outage of the database before the stream opens is 503 `database_unavailable` with
 * `Retry-After` (`outage_refusal.ts`), answered here, not by the app's exception handler.
 */
export default class DoorController {
  async handle(ctx: HttpContext) {
    const served = mountedRoute(ctx)
    if (!served) throw new Error('agent-stream: a door route mounted without its adapter')
    return answeringOutages((routed: HttpContext) => serve(routed, served))(ctx)
  }
}

async function serve(ctx: HttpContext, mounted: MountedRoute) {
  const { options, table, route } = mounted
  const principal = await resolvePrincipal(ctx, options.principal)
  const body: unknown = route.body === 'json' ? ctx.request.body() : undefined
  const limited = await admit(options.limits, principal, routeNeeds(route))
  if ('refused' in limited) return sendRefusal(ctx.response, limited.refused)
  const { admitted } = limited
  const controller = new AbortController()
  try {
    const answer = await route.answer({
      params: routeParams(ctx.params as Record<string, unknown>),
      query: ctx.request.qs(),
      after: cursorOf(ctx),
      accept: ctx.request.header('accept'),
      headers: nodeHeaders(ctx.request.headers()),
      method: ctx.request.method(),
      url: ctx.request.completeUrl(true),
      principal,
      body,
      bytes: route.body === 'bytes' ? bodyBytes(ctx) : undefined,
      signal: controller.signal,
    })
    const abort = route.drives && (options.abortOnDisconnect ?? table.abortOnDisconnect ?? false)
    return await respond(ctx, answer, mounted, controller, abort ? table.cancel : undefined)
  } finally {
    // A stream's slot is held until it ended (`respond` waits for it); anything else's at once.
    admitted.release()
  }
}

/** Send `answer`; a stream's `cancel` cancels its run if the client goes away. */
async function respond(
  ctx: HttpContext,
  answer: DoorAnswer,
  mounted: MountedRoute,
  controller: AbortController,
  cancel: ((streamRunId: string) => void) | undefined
) {
  const { response } = ctx
  switch (answer.kind) {
    case 'refused':
      return sendRefusal(response, answer)
    case 'none':
      return response.noContent()
    case 'json':
      for (const [name, value] of Object.entries(answer.headers ?? {})) response.header(name, value)
      return response.status(answer.status ?? 200).json(answer.body)
    case 'raw':
      for (const [name, value] of Object.entries(answer.headers)) response.header(name, value)
      response.status(answer.status)
      if (answer.body === undefined) return response.send('')
      return response.send(typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body))
    case 'stream': {
      const untrack = mounted.track(controller)
      const { streamRunId } = answer
      try {
        await serveChunks(ctx.request.request, response.response, answer.chunks, {
          heartbeatMs: mounted.options.heartbeatMs,
          controller,
          contentType: answer.contentType,
          headers: { ...response.getHeaders(), ...answer.headers },
          onClose: cancel && streamRunId ? () => cancel(streamRunId) : undefined,
        })
      } finally {
        untrack()
      }
    }
  }
}

/**
 * The route's parameters as strings: AdonisJS gives a trailing `*` as the array of the rest's
 * segments, joined here with `/` (as `matchPath` does).
 */
function routeParams(params: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(params).map(([k, v]) => [k, Array.isArray(v) ? v.join('/') : String(v)])
  )
}

/** Node's headers by lower-case name, a repeated one joined with `, ` (as the Fetch API does). */
function nodeHeaders(headers: Record<string, string | string[] | undefined>) {
  const joined: Record<string, string | undefined> = {}
  for (const [name, value] of Object.entries(headers)) {
    joined[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
  }
  return joined
}

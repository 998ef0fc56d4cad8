import type { HttpContext } from '@adonisjs/core/http'
import type { Principal } from '../core/run.js'
import { resolvePrincipal, type PrincipalResolver } from './principal.js'
import { cursorOf } from './cursor_of.js'
import type { AgUiDoor, AgUiReply } from '../agui/door/index.js'
import { serveAgUiEvents } from './sse.js'
import { mediaTypeRefusal } from './media_type.js'
import { refusalBody, sendRefusal } from './refusal.js'

/**
 * The AG-UI routes as an AdonisJS controller (the routes helper mounts it): `run` for
 * `POST` (`RunAgentInput` in, SSE out) and `reattach` for `GET` (`Last-Event-ID` or `?after=`;
 * the query wins). Refusals before the stream opens are JSON `{ code, message }` with a 4xx (415
 * `unsupported_media_type` for a body that is not JSON, `media_type.ts`).
 */
export class AgUiController {
  /** Responses being served: ended on shutdown. */
  #open = new Set<AbortController>()

  constructor(
    readonly door: AgUiDoor,
    readonly options: {
      principal?: PrincipalResolver
      heartbeatMs?: number
      abortOnDisconnect?: boolean
    } = {}
  ) {}

  run(ctx: HttpContext) {
    const refused = mediaTypeRefusal(ctx.request.header('content-type'))
    if (refused) {
      return ctx.response.status(refused.status).json(refusalBody(refused))
    }
    return this.#handle(
      ctx,
      (principal, _after, signal) => this.door.run(ctx.request.body(), principal, signal),
      true
    )
  }

  reattach(ctx: HttpContext) {
    return this.#handle(ctx, (principal, after, signal) =>
      this.door.reattach(String(ctx.params.runId), after, principal, signal)
    )
  }

  /** `GET` the thread's current run (`connect(threadId)`), from `Last-Event-ID` or `?after=`. */
  attach(ctx: HttpContext) {
    return this.#handle(ctx, (principal, after, signal) =>
      this.door.attachThread(String(ctx.params.threadId), after, principal, signal)
    )
  }

  /** Who asks, from which cursor (`?after=` wins over `Last-Event-ID`), then serve the reply. */
  async #handle(
    ctx: HttpContext,
    answer: (
      principal: Principal | null,
      after: string | undefined,
      signal: AbortSignal
    ) => Promise<AgUiReply>,
    /** This response drives the run (a POST): the only one whose disconnect may cancel it. */
    drives = false
  ) {
    const controller = new AbortController()
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const reply = await answer(principal, cursorOf(ctx), controller.signal)
    return this.#serve(ctx, reply, controller, drives)
  }

  /** End every response being served (the provider calls it on shutdown). */
  closeAll() {
    for (const controller of this.#open) controller.abort()
  }

  async #serve(ctx: HttpContext, reply: AgUiReply, controller: AbortController, drives: boolean) {
    if (reply.kind === 'refused') return sendRefusal(ctx.response, reply)
    this.#open.add(controller)
    const streamRunId = reply.streamRunId
    try {
      await serveAgUiEvents(ctx.request.request, ctx.response.response, reply.events, {
        heartbeatMs: this.options.heartbeatMs,
        controller,
        headers: ctx.response.getHeaders(),
        onClose: () => {
          if (drives && this.options.abortOnDisconnect && streamRunId)
            this.door.driver.abort(streamRunId)
        },
      })
    } finally {
      this.#open.delete(controller)
    }
  }
}

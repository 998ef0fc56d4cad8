import type { HttpContext } from '@adonisjs/core/http'
import { defaultPrincipal, type PrincipalResolver } from './principal.js'
import type { AgUiDoor, DoorReply } from './agui_door.js'
import { serveAgUiEvents } from './sse.js'

/**
 * The AG-UI routes as an AdonisJS controller (the routes helper mounts it): `run` for
 * `POST` (`RunAgentInput` in, SSE out) and `reattach` for `GET` (`Last-Event-ID` or `?after=`;
 * the query wins). Refusals before the stream opens are JSON `{ code, message }` with a 4xx.
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

  async run(ctx: HttpContext) {
    const controller = new AbortController()
    const principal = await (this.options.principal ?? defaultPrincipal)(ctx)
    const reply = await this.door.run(ctx.request.body(), principal, controller.signal)
    return this.#serve(ctx, reply, controller)
  }

  async reattach(ctx: HttpContext) {
    const controller = new AbortController()
    const principal = await (this.options.principal ?? defaultPrincipal)(ctx)
    const after = ctx.request.qs().after ?? ctx.request.header('last-event-id') ?? undefined
    const reply = await this.door.reattach(
      String(ctx.params.runId),
      typeof after === 'string' && after.length > 0 ? after : undefined,
      principal,
      controller.signal
    )
    return this.#serve(ctx, reply, controller)
  }

  /** `GET` the thread's current run (`connect(threadId)`), from `Last-Event-ID` or `?after=`. */
  async attach(ctx: HttpContext) {
    const controller = new AbortController()
    const principal = await (this.options.principal ?? defaultPrincipal)(ctx)
    const after = ctx.request.qs().after ?? ctx.request.header('last-event-id') ?? undefined
    const reply = await this.door.attachThread(
      String(ctx.params.threadId),
      typeof after === 'string' && after.length > 0 ? after : undefined,
      principal,
      controller.signal
    )
    return this.#serve(ctx, reply, controller)
  }

  /** End every response being served (the provider calls it on shutdown). */
  closeAll() {
    for (const controller of this.#open) controller.abort()
  }

  async #serve(ctx: HttpContext, reply: DoorReply, controller: AbortController) {
    if (reply.kind === 'refused') {
      return ctx.response.status(reply.status).json({ code: reply.code, message: reply.message })
    }
    this.#open.add(controller)
    const streamRunId = reply.streamRunId
    try {
      await serveAgUiEvents(ctx.request.request, ctx.response.response, reply.events, {
        heartbeatMs: this.options.heartbeatMs,
        controller,
        onClose: () => {
          if (this.options.abortOnDisconnect && streamRunId) this.door.driver.abort(streamRunId)
        },
      })
    } finally {
      this.#open.delete(controller)
    }
  }
}

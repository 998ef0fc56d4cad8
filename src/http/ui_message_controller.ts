import type { HttpContext } from '@adonisjs/core/http'
import type { Principal } from '../core/run.js'
import type { UiDoorReply, UiMessageDoor } from '../ui_message/door/index.js'
import { cursorOf } from './cursor_of.js'
import { mediaTypeRefusal } from './media_type.js'
import { refusalBody, sendRefusal } from './refusal.js'
import { resolvePrincipal, type PrincipalResolver } from './principal.js'
import { serveChunks } from './sse.js'
import { UI_MESSAGE_STREAM_HEADER, uiMessageSse } from './ui_message_encoding.js'

/**
 * The `useChat` routes as an AdonisJS controller: `chat` for `POST /chat` (the body of
 * `DefaultChatTransport`), `resume` for `GET /chat/:chatId/stream` (its `reconnectToStream`; 204
 * when nothing is active), `messages` for `GET /chat/:chatId/messages` (the stored messages). Refusals before the stream opens are JSON `{ code, message }` with a
 * 4xx, which the transport raises as the chat's error (415 for a body that is not JSON).
 */
export class UiMessageController {
  /** Responses being served: ended on shutdown. */
  #open = new Set<AbortController>()

  constructor(
    readonly door: UiMessageDoor,
    readonly options: { principal?: PrincipalResolver; heartbeatMs?: number } = {}
  ) {}

  chat(ctx: HttpContext) {
    const refused = mediaTypeRefusal(ctx.request.header('content-type'))
    if (refused) {
      return ctx.response.status(refused.status).json(refusalBody(refused))
    }
    return this.#handle(ctx, (principal, signal) =>
      this.door.chat(ctx.request.body(), principal, signal)
    )
  }

  resume(ctx: HttpContext) {
    return this.#handle(ctx, (principal, signal) =>
      this.door.resume(String(ctx.params.chatId), cursorOf(ctx), principal, signal)
    )
  }

  /** `GET /chat/:chatId/messages`: the chat's `UIMessage[]` (JSON), or 404 `not_found`. */
  async messages(ctx: HttpContext) {
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const reply = await this.door.messages(String(ctx.params.chatId), principal)
    if (reply.kind === 'messages') return ctx.response.json(reply.messages)
    if (reply.kind === 'refused') return ctx.response.status(reply.status).json(refusalBody(reply))
    return ctx.response.noContent()
  }

  /** End every response being served (the provider calls it on shutdown). */
  closeAll() {
    for (const controller of this.#open) controller.abort()
  }

  async #handle(
    ctx: HttpContext,
    answer: (principal: Principal | null, signal: AbortSignal) => Promise<UiDoorReply>
  ) {
    const controller = new AbortController()
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const reply = await answer(principal, controller.signal)
    if (reply.kind === 'refused') return sendRefusal(ctx.response, reply)
    if (reply.kind === 'none') return ctx.response.noContent()
    this.#open.add(controller)
    try {
      await serveChunks(ctx.request.request, ctx.response.response, uiMessageSse(reply.events), {
        heartbeatMs: this.options.heartbeatMs,
        controller,
        headers: { ...ctx.response.getHeaders(), ...UI_MESSAGE_STREAM_HEADER },
      })
    } finally {
      this.#open.delete(controller)
    }
  }
}

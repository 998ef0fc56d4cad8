import type { HttpContext } from '@adonisjs/core/http'
import type { ThreadList } from '../store/thread_list.js'
import { resolvePrincipal, type PrincipalResolver } from './principal.js'
import { refusalBody } from './refusal.js'
import { THREAD_PAGE_HEADERS, threadPage, threadPageBody } from './thread_page.js'

/**
 * A person's conversations as an AdonisJS controller: `chats` for `GET /chat` (the useChat
 * door's name, `chatId`), `threads` for `GET /agui/threads` (AG-UI's, `threadId`). One list (a
 * chat is a thread), one rule (`thread_page.ts`), the same answer as the Fetch-API handlers.
 */
export class ThreadsController {
  constructor(
    readonly list: ThreadList,
    readonly options: { principal?: PrincipalResolver } = {}
  ) {}

  chats(ctx: HttpContext) {
    return this.#answer(ctx, 'chat')
  }

  threads(ctx: HttpContext) {
    return this.#answer(ctx, 'agui')
  }

  async #answer(ctx: HttpContext, door: 'chat' | 'agui') {
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const answer = await threadPage(this.list, ctx.request.qs(), principal)
    for (const [name, value] of Object.entries(THREAD_PAGE_HEADERS)) {
      ctx.response.header(name, value)
    }
    if ('refused' in answer) {
      return ctx.response.status(answer.refused.status).json(refusalBody(answer.refused))
    }
    return ctx.response.json(threadPageBody(answer.page, door))
  }
}

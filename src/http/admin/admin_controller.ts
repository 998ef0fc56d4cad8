import { randomBytes } from 'node:crypto'
import type { HttpContext } from '@adonisjs/core/http'
import { safeEqual } from '@adonisjs/core/helpers'
import { DateTime } from 'luxon'
import type { ParkingService } from '../../parking/service.js'
import { asHttpError } from '../decisions_controller.js'
import { resolvePrincipal, type AdminAuthorizer, type PrincipalResolver } from '../principal.js'
import { adminAllowed, adminHeaders } from './guard.js'
import { answersFromForm, validateDecisionForm } from './form.js'
import { renderItems, renderPage, type PageContext } from './page.js'
import { DEPTH_ISSUE, tooDeep } from '../../core/json_depth.js'
import { describeIssues } from '../../errors.js'

const CSRF_COOKIE = 'agent_stream_csrf'
/** Items per admin page. */
const PAGE_SIZE = 100

/**
 * The admin page (server-rendered, no build step): pending approvals and question sets across
 * all runs, newest first, decided ones in a history view; approve / reject with a reason, answer
 * a question set. Denied (403) unless the app's `admin` hook allows. Forms carry a token that must
 * match a signed, `SameSite=Strict` cookie (cross-site requests are refused); a strict
 * Content-Security-Policy lets only the page's own script run; every value is escaped and
 * isolated from bidi overrides (`page.ts`). A form nested deeper than `MAX_JSON_DEPTH` is
 * refused (422) before anything else.
 */
export class AdminController {
  constructor(
    readonly parking: ParkingService,
    readonly options: {
      base: string
      authorize?: AdminAuthorizer
      principal?: PrincipalResolver
    }
  ) {}

  async page(ctx: HttpContext) {
    if (!(await this.#allowed(ctx))) return
    const page = this.#context(ctx, this.#csrf(ctx))
    const items = await this.#items(page)
    this.#headers(ctx, page.nonce)
    return ctx.response.type('html').send(renderPage(page, items))
  }

  /** The list alone, for the page's live updates. */
  async items(ctx: HttpContext) {
    if (!(await this.#allowed(ctx))) return
    const token = ctx.request.cookie(CSRF_COOKIE)
    if (typeof token !== 'string') return ctx.response.status(403).send('')
    const page = this.#context(ctx, token)
    const items = await this.#items(page)
    this.#headers(ctx, page.nonce)
    return ctx.response.type('html').send(renderItems(page, items))
  }

  /** A form post: approve, reject or answer; then back to the page with a notice (303). */
  async decide(ctx: HttpContext) {
    if (!(await this.#allowed(ctx))) return
    const back = (notice: string) =>
      ctx.response.redirect().status(303).toPath(`${this.options.base}/admin?notice=${notice}`)
    const body = ctx.request.body() as Record<string, any>
    if (tooDeep(body)) {
      ctx.response.status(422)
      return ctx.response
        .type('html')
        .send(`<p>${describeIssues('Invalid form', [DEPTH_ISSUE])}</p>`)
    }
    const cookie = ctx.request.cookie(CSRF_COOKIE)
    if (
      typeof cookie !== 'string' ||
      typeof body._csrf !== 'string' ||
      !safeEqual(cookie, body._csrf) ||
      ctx.request.header('sec-fetch-site') === 'cross-site'
    ) {
      ctx.response.status(403)
      return ctx.response.type('html').send('<p>The form expired: reload the page.</p>')
    }
    const principal = await resolvePrincipal(ctx, this.options.principal)
    const decider = { principal, via: 'admin' }
    const { runId, itemId, action } = ctx.params
    if (!['approve', 'reject', 'answer'].includes(action)) return ctx.response.status(404).send('')
    try {
      // The whole form is validated before any item is looked up.
      const decision = await validateDecisionForm(body)
      if (action === 'approve') await this.parking.approve(runId, itemId, decider, decision)
      else if (action === 'reject') await this.parking.reject(runId, itemId, decider, decision)
      else {
        // The stored question set decodes the form (`form.ts`); a missing item answers nothing,
        // and the service says why.
        const item = await this.parking.findItem(runId, itemId, decision.park)
        const answers = item?.request ? answersFromForm(body, item.request) : {}
        await this.parking.answer(runId, itemId, decider, { answers, park: decision.park })
      }
    } catch (error) {
      const answer = asHttpError(error)
      if (!answer) throw error
      return back(answer.code)
    }
    return back(action === 'answer' ? 'answered' : action === 'approve' ? 'approved' : 'rejected')
  }

  #allowed(ctx: HttpContext) {
    return adminAllowed(ctx, this.options.authorize)
  }

  #csrf(ctx: HttpContext) {
    const existing = ctx.request.cookie(CSRF_COOKIE)
    const token = typeof existing === 'string' ? existing : randomBytes(24).toString('base64url')
    ctx.response.cookie(CSRF_COOKIE, token, {
      httpOnly: true,
      sameSite: 'strict',
      path: this.options.base || '/',
    })
    return token
  }

  /** The page's items: one page of them (the page links reach the rest). */
  async #items(page: PageContext) {
    const items = await this.parking.list({
      status: page.view,
      page: page.page,
      perPage: PAGE_SIZE,
    })
    page.more = items.length === PAGE_SIZE
    return items
  }

  #context(ctx: HttpContext, csrf: string): PageContext {
    const view = ctx.request.qs().view === 'decided' ? 'decided' : 'pending'
    const notice = ctx.request.qs().notice
    const asked = String(ctx.request.qs().page ?? '')
    return {
      base: this.options.base,
      view,
      // Digits only, and no further than the listing goes (1000 pages).
      page: /^[1-9][0-9]{0,2}$/.test(asked) ? Number(asked) : 1,
      more: false,
      csrf,
      nonce: randomBytes(16).toString('base64'),
      notice: typeof notice === 'string' ? notice : undefined,
      now: DateTime.now(),
    }
  }

  #headers(ctx: HttpContext, nonce: string) {
    adminHeaders(ctx, nonce)
  }
}

import type { HttpContext } from '@adonisjs/core/http'
import { DateTime } from 'luxon'
// Expiry and ages are in the database's time, as the sweeper and the decisions compare them.
import { nowMs } from '../../store/sql.js'
import type { ProjectionRules } from '../../core/projection.js'
import type { Parking } from '../../parking/parking.js'
import type { ParkedItem } from '../../parking/types.js'
import { asHttpError } from '../decisions_controller.js'
import {
  resolvePrincipal,
  type AdminAuthorizer,
  type DisplayName,
  type PrincipalResolver,
} from '../principal.js'
import {
  answersFromForm,
  editedInput,
  INVALID_JSON,
  UNCHANGED,
  validateDecisionForm,
} from './form.js'
import { NOTICES } from './notices.js'
import {
  CSRF_FIELD,
  adminAllowed,
  adminHeaders,
  csrfCookie,
  csrfFields,
  csrfToken,
  csrfValid,
  refuseForm,
} from './access.js'
import { e, newNonce, renderShell } from './layout.js'
import { parseListQuery, queryIssues, storeFilter, type ListQuery } from './filters.js'
import { renderList, renderListBody, shownPrincipals, type ListContext } from './list_page.js'
import { renderItem, renderPanel } from './item_page.js'
import { renderConversation, type ReplayFrames } from './conversation.js'
import { QueueLive } from './live.js'
import { serveQueueEvents } from './queue_events.js'
import { clientScript } from './client_script.js'
import { PrincipalNames } from './names.js'
import { deciding } from './who_decides.js'
import { DEPTH_ISSUE, tooDeep } from '../../core/json_depth.js'
import { describeIssues } from '../../errors.js'

/** Rows per page of the queue and the history. */
const PAGE_SIZE = 50
/** Items in the queue beside an item. */
const PANEL_SIZE = 15
/** An admin event stream ends after this long (the browser's EventSource reconnects at once). */
const EVENTS_MS = 60_000

export interface AdminOptions {
  base: string
  authorize?: AdminAuthorizer
  principal?: PrincipalResolver
  /** The app's display names for principal ids (config `displayName`). */
  displayName?: DisplayName
  /** The app's projection opt-ins (`agui.*`): the console shows what a door would send. */
  rules: ProjectionRules
  /** The sink's one read path (`sink.replay`). */
  replay: ReplayFrames
  /** The sink's tail (`tail.observe`): wake-ups for the live queue. */
  observe: (listener: (runId: string) => void) => () => void
  /** The live queue's poll, in milliseconds (the sink's `pollIntervalMs`). */
  pollMs: number
  /** Aborted when the replica shuts down: open `events` responses end (the browser reconnects). */
  closing?: AbortSignal
}

/**
 * The admin console (server-rendered, no build step): the queue of pending items, an item in
 * context with its decision forms, the history; live updates over SSE. Denied (403) unless the
 * app's `admin` hook allows. Forms carry a token that must match a `SameSite=Strict` cookie
 * (cross-site requests are refused); a strict Content-Security-Policy lets only the page's own
 * script run; every value is escaped and isolated from bidi controls (`layout.ts`). A form nested
 * deeper than `MAX_JSON_DEPTH` is refused (422) before anything else; a filter that breaks a rule
 * is a 400 naming it.
 */
export class AdminController {
  readonly live: QueueLive

  constructor(
    readonly parking: Parking,
    readonly options: AdminOptions
  ) {
    this.live = new QueueLive(parking, { observe: options.observe, pollMs: options.pollMs })
  }

  /** `GET /admin`: the queue. */
  page(ctx: HttpContext) {
    return this.#list(ctx, 'pending')
  }

  /** `GET /admin/history`: decided items. */
  history(ctx: HttpContext) {
    return this.#list(ctx, 'decided')
  }

  /**
   * `GET /admin/items`: the live part of a list (`view=pending|decided`, with its filters), or
   * the queue beside an item (`view=panel`).
   */
  async items(ctx: HttpContext) {
    if (!(await this.#allowed(ctx))) return
    if (csrfCookie(ctx) === undefined) return ctx.response.status(403).send('')
    const nonce = newNonce()
    adminHeaders(ctx, nonce)
    const qs = ctx.request.qs()
    if (qs.view === 'panel') {
      return ctx.response.type('html').send(await this.#panel(this.#names()))
    }
    const view = qs.view === 'decided' ? 'decided' : 'pending'
    const query = await this.#query(ctx)
    if (!query) return
    const list = await this.#listContext(view, query, this.#names())
    return ctx.response.type('html').send(renderListBody(list))
  }

  /** `GET /admin/items/:runId/:itemId?park=`: one item in context. */
  async item(ctx: HttpContext) {
    if (!(await this.#allowed(ctx))) return
    const csrf = csrfFields(ctx, this.options.base)
    const nonce = newNonce()
    adminHeaders(ctx, nonce)
    const park = String(ctx.request.qs().park ?? '')
    const pinned = /^[1-9][0-9]{0,9}$/.test(park) ? Number(park) : undefined
    const { runId, itemId } = ctx.params
    const item = await this.parking.queries.listedItem(runId, itemId, pinned)
    if (!item) {
      ctx.response.status(404)
      return ctx.response.type('html').send(
        renderShell({
          base: this.options.base,
          nonce,
          title: 'Not found',
          current: 'queue',
          main: '<h1>Not found</h1><p>This item does not exist.</p>',
        })
      )
    }
    const now = DateTime.fromMillis(nowMs())
    const conversation = await renderConversation(
      this.options.replay,
      item.streamRunId,
      item.streamSeq,
      this.options.rules
    )
    const next = item.status === 'pending' ? await this.#nextAfter(item) : null
    const notice = this.#notice(ctx)
    const names = await this.#names().load([item.requesterId, item.decidedBy])
    const principal = await resolvePrincipal(ctx, this.options.principal)
    if (principal) await names.load([principal.id])
    const main = renderItem({
      base: this.options.base,
      csrf,
      item,
      conversation,
      next,
      now,
      names,
      deciding: await deciding(this.parking, principal, item, names, now.toMillis()),
    })
    return ctx.response.type('html').send(
      renderShell({
        base: this.options.base,
        nonce,
        title: item.kind === 'approval' ? `Approve ${item.toolName}` : 'Question set',
        current: item.status === 'pending' ? 'queue' : 'history',
        notice,
        main: main.replace(
          '<div id="list" data-view="panel"></div>',
          `<div id="list" data-view="panel">${await this.#panel(names, `${item.runId}\u0000${item.itemId}\u0000${item.park}`)}</div>`
        ),
        script: clientScript({
          events: `${this.options.base}/admin/events`,
          fragment: `${this.options.base}/admin/items?view=panel`,
        }),
      })
    )
  }

  /**
   * `GET /admin/events`: SSE, one `queue` event (data: the queue's fingerprint) whenever an item
   * is parked or decided anywhere. Ends after a minute; the browser reconnects.
   */
  async events(ctx: HttpContext) {
    if (!(await this.#allowed(ctx))) return
    if (csrfCookie(ctx) === undefined) return ctx.response.status(403).send('')
    await serveQueueEvents(ctx, this.live, { closing: this.options.closing, maxMs: EVENTS_MS })
  }

  /** A form post: approve (maybe with an edited input), reject or answer; then back with a notice (303). */
  async decide(ctx: HttpContext) {
    if (!(await this.#allowed(ctx))) return
    const { runId, itemId, action } = ctx.params
    const queue = `${this.options.base}/admin`
    const back = (notice: string, to = queue) =>
      ctx.response
        .redirect()
        .status(303)
        .toPath(`${to}${to.includes('?') ? '&' : '?'}notice=${notice}`)
    const body = ctx.request.body() as Record<string, any>
    if (tooDeep(body)) {
      ctx.response.status(422)
      return ctx.response
        .type('html')
        .send(`<p>${describeIssues('Invalid form', [DEPTH_ISSUE])}</p>`)
    }
    if (!csrfValid(ctx, body[CSRF_FIELD])) return this.csrfRefused(ctx)
    const principal = await resolvePrincipal(ctx, this.options.principal)
    // The admin hook allowed: they see every item (a refusal is 403); the policy decides.
    const decider = { principal, via: 'admin', admin: true }
    if (!['approve', 'reject', 'answer'].includes(action)) return ctx.response.status(404).send('')
    let park: number | undefined
    try {
      // The whole form is validated before any item is looked up.
      const decision = await validateDecisionForm(body)
      park = decision.park
      if (action === 'approve') {
        const edited = await editedInput(body.input, () =>
          this.parking.queries.findItem(runId, itemId, decision.park)
        )
        if (edited === INVALID_JSON)
          return back('invalid_json', this.#itemPath(runId, itemId, decision.park))
        await this.parking.decisions.approve(runId, itemId, decider, {
          ...decision,
          ...(edited === UNCHANGED ? {} : { input: edited }),
        })
      } else if (action === 'reject')
        await this.parking.decisions.reject(runId, itemId, decider, decision)
      else {
        // The stored question set decodes the form (`form.ts`); a missing item answers nothing,
        // and the decision says why.
        const item = await this.parking.queries.findItem(runId, itemId, decision.park)
        const answers = item?.request ? answersFromForm(body, item.request) : {}
        await this.parking.decisions.answer(runId, itemId, decider, {
          answers,
          park: decision.park,
        })
      }
    } catch (error) {
      const answer = asHttpError(error)
      if (!answer) throw error
      // Back to the item (it shows why, and what it is now), unless there is none.
      const to = answer.code === 'E_PARKED_NOT_FOUND' ? queue : this.#itemPath(runId, itemId, park)
      return back(answer.code, to)
    }
    return back(action === 'answer' ? 'answered' : action === 'approve' ? 'approved' : 'rejected')
  }

  /** A decision form whose CSRF token was refused (the console's own, or the app's shield). */
  csrfRefused(ctx: HttpContext) {
    return refuseForm(ctx, this.options.base)
  }

  #itemPath(runId: string, itemId: string, park?: number) {
    return `${this.options.base}/admin/items/${encodeURIComponent(runId)}/${encodeURIComponent(itemId)}${park ? `?park=${park}` : ''}`
  }

  /** The queue's item after `item` (newest first), or null. */
  async #nextAfter(item: ParkedItem) {
    const { items } = await this.parking.queue.page(
      { view: 'pending' },
      {
        order: 'newest',
        limit: 1,
        after: {
          at: Date.parse(item.createdAt),
          kind: item.kind,
          runId: item.runId,
          park: item.park,
          itemId: item.itemId,
        },
      }
    )
    return items[0] ?? null
  }

  #allowed(ctx: HttpContext) {
    return adminAllowed(ctx, this.options.authorize)
  }

  #notice(ctx: HttpContext) {
    const notice = ctx.request.qs().notice
    return typeof notice === 'string' && Object.hasOwn(NOTICES, notice)
      ? NOTICES[notice]
      : undefined
  }

  /** The query string, validated; a refused one has been answered (400, naming the rules). */
  async #query(ctx: HttpContext): Promise<ListQuery | null> {
    try {
      return await parseListQuery(ctx.request.qs())
    } catch (error) {
      const issues = queryIssues(error)
      if (!issues) throw error
      ctx.response.status(400)
      ctx.response.type('html').send(`<p>${e(describeIssues('Invalid filter', issues))}</p>`)
      return null
    }
  }

  /** This request's display names (each id asked once per request). */
  #names() {
    return new PrincipalNames(this.options.displayName)
  }

  async #listContext(
    view: 'pending' | 'decided',
    query: ListQuery,
    names: PrincipalNames
  ): Promise<ListContext> {
    const now = DateTime.fromMillis(nowMs())
    const filter = storeFilter(view, query, now.toMillis())
    const [page, counts] = await Promise.all([
      this.parking.queue.page(filter, { order: query.order, after: query.after, limit: PAGE_SIZE }),
      this.parking.queue.counts(filter, now.toMillis()),
    ])
    await names.load(shownPrincipals(page.items))
    return {
      base: this.options.base,
      view,
      query,
      items: page.items,
      next: page.next,
      counts,
      now,
      names,
    }
  }

  async #panel(names: PrincipalNames, current?: string) {
    const [page, counts] = await Promise.all([
      this.parking.queue.page({ view: 'pending' }, { order: 'newest', limit: PANEL_SIZE }),
      this.parking.queue.watermark(),
    ])
    await names.load(shownPrincipals(page.items))
    return renderPanel(this.options.base, page.items, counts.pending, names, current)
  }

  async #list(ctx: HttpContext, view: 'pending' | 'decided') {
    const started = performance.now()
    if (!(await this.#allowed(ctx))) return
    // The history's address before it had its own.
    if (view === 'pending' && ctx.request.qs().view === 'decided')
      return ctx.response.redirect().toPath(`${this.options.base}/admin/history`)
    csrfToken(ctx, this.options.base)
    const nonce = newNonce()
    adminHeaders(ctx, nonce)
    const query = await this.#query(ctx)
    if (!query) return
    if (view === 'pending' && query.status) {
      // A decided status is the history's view.
      const qs = new URLSearchParams(
        Object.entries(ctx.request.qs()).filter(([, v]) => typeof v === 'string') as [
          string,
          string,
        ][]
      )
      return ctx.response.redirect().toPath(`${this.options.base}/admin/history?${qs}`)
    }
    const list = await this.#listContext(view, query, this.#names())
    const fragment = new URLSearchParams(
      Object.entries({ ...ctx.request.qs(), view }).filter(
        ([k, v]) => typeof v === 'string' && k !== 'notice'
      ) as [string, string][]
    )
    const html = renderShell({
      base: this.options.base,
      nonce,
      title: view === 'pending' ? 'Queue' : 'History',
      current: view === 'pending' ? 'queue' : 'history',
      notice: this.#notice(ctx),
      main: renderList(list),
      script: clientScript({
        events: `${this.options.base}/admin/events`,
        fragment: `${this.options.base}/admin/items?${fragment}`,
      }),
    })
    // The server's time for the page (reads and rendering), for operators and the benchmark.
    ctx.response.header('Server-Timing', `app;dur=${(performance.now() - started).toFixed(1)}`)
    return ctx.response.type('html').send(html)
  }
}

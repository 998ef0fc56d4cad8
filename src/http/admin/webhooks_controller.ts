import type { HttpContext } from '@adonisjs/core/http'
import type { Webhooks } from '../../telemetry/webhooks/index.js'
import { tooDeep } from '../../core/json_depth.js'
import type { AdminAuthorizer } from '../principal.js'
import { adminAllowed, adminHeaders, CSRF_FIELD, csrfFields, csrfValid } from './access.js'
import { newNonce } from './layout.js'
import { renderWebhooksPage } from './webhooks_page.js'

/** Dead deliveries the page lists at most (newest first). */
const DEAD_LIMIT = 200

/** A `webhook-id` as the outbox mints it. */
const WEBHOOK_ID = /^msg_[0-9a-f]{32}$/

/**
 * The console's Webhooks section: the dead letters (`GET <base>/admin/webhooks`) and a retry of
 * one (`POST <base>/admin/webhooks/:id/retry`, a form with the console's CSRF token). Behind the
 * console's own rule (the app's `admin` hook; 403 without it) and headers.
 */
export class WebhooksController {
  constructor(
    readonly webhooks: () => Webhooks | null,
    readonly options: { base: string; authorize?: AdminAuthorizer }
  ) {}

  async page(ctx: HttpContext) {
    if (!(await adminAllowed(ctx, this.options.authorize))) return
    const nonce = newNonce()
    adminHeaders(ctx, nonce)
    const webhooks = this.webhooks()
    const dead = webhooks ? await webhooks.deliveries.dead(DEAD_LIMIT) : []
    const retried = ctx.request.qs().retried
    return ctx.response.type('html').send(
      renderWebhooksPage(
        {
          base: this.options.base,
          nonce,
          enabled: webhooks !== null,
          fields: csrfFields(ctx, this.options.base),
          retried: typeof retried === 'string' ? retried : undefined,
        },
        dead
      )
    )
  }

  async retry(ctx: HttpContext) {
    if (!(await adminAllowed(ctx, this.options.authorize))) return
    const body = ctx.request.body() as Record<string, unknown>
    if (tooDeep(body) || !csrfValid(ctx, body[CSRF_FIELD])) return this.csrfRefused(ctx)
    const id = String(ctx.params.id)
    const webhooks = this.webhooks()
    const retried =
      webhooks !== null && WEBHOOK_ID.test(id) && (await webhooks.deliveries.retry(id))
    if (retried) webhooks.deliverer.wake()
    return this.#back(ctx, retried ? 'queued' : 'not_dead')
  }

  /** A retry form whose CSRF token was refused: 403, the page saying nothing was retried. */
  csrfRefused(ctx: HttpContext) {
    const nonce = newNonce()
    adminHeaders(ctx, nonce)
    ctx.response.status(403)
    return ctx.response.type('html').send(
      renderWebhooksPage(
        {
          base: this.options.base,
          nonce,
          enabled: this.webhooks() !== null,
          fields: csrfFields(ctx, this.options.base),
          retried: 'csrf',
        },
        []
      )
    )
  }

  #back(ctx: HttpContext, said: string) {
    return ctx.response
      .redirect()
      .status(303)
      .toPath(`${this.options.base}/admin/webhooks?retried=${said}`)
  }
}

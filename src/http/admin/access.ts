import { randomBytes } from 'node:crypto'
import type { HttpContext } from '@adonisjs/core/http'
import { safeEqual } from '@adonisjs/core/helpers'
import type { AdminAuthorizer } from '../principal.js'
import { contentSecurityPolicy, e, newNonce, renderShell } from './layout.js'
import { NOTICES } from './notices.js'

/**
 * Who may use the admin console and how its responses are guarded, one place for every admin
 * view: denied by default, the CSRF cookie and its form token, the response headers.
 */

/** The CSRF cookie: signed, `SameSite=Strict`, HTTP only, scoped to the route prefix. */
export const CSRF_COOKIE = 'agent_stream_csrf'

/**
 * The form field carrying the package's own token. Not `_csrf`: that is the field
 * `@adonisjs/shield` reads, which carries shield's token when the app has shield.
 */
export const CSRF_FIELD = 'agent_stream_csrf'

/** The field `@adonisjs/shield` reads its token from. */
const SHIELD_FIELD = '_csrf'

/**
 * Whether the request may use the admin console (the app's `admin` hook; nobody without one).
 * A refused request has been answered (403) when this returns false.
 */
export async function adminAllowed(ctx: HttpContext, authorize?: AdminAuthorizer) {
  if (authorize && (await authorize(ctx))) return true
  ctx.response.status(403).type('html').send('<p>Forbidden</p>')
  return false
}

/** The request's CSRF token: the cookie's, or a new one set as the cookie (192 bits). */
export function csrfToken(ctx: HttpContext, base: string) {
  const existing = ctx.request.cookie(CSRF_COOKIE)
  const token = typeof existing === 'string' ? existing : randomBytes(24).toString('base64url')
  ctx.response.cookie(CSRF_COOKIE, token, { httpOnly: true, sameSite: 'strict', path: base || '/' })
  return token
}

/**
 * The hidden fields of a decision form: the package's own token (checked by the console on
 * every post, shield or not), and shield's token under shield's own field when the app's
 * `@adonisjs/shield` guards the request (it sets `request.csrfToken`), which shield checks
 * before the post reaches the console.
 */
export function csrfFields(ctx: HttpContext, base: string): Array<[name: string, value: string]> {
  const fields: Array<[string, string]> = [[CSRF_FIELD, csrfToken(ctx, base)]]
  const shield = (ctx.request as { csrfToken?: unknown }).csrfToken
  if (typeof shield === 'string' && shield) fields.push([SHIELD_FIELD, shield])
  return fields
}

/** The CSRF token the cookie holds, or undefined (no page was loaded first). */
export const csrfCookie = (ctx: HttpContext) => {
  const token = ctx.request.cookie(CSRF_COOKIE)
  return typeof token === 'string' ? token : undefined
}

/**
 * Whether a form post carries the cookie's token and is not cross-site (constant-time compare).
 */
export function csrfValid(ctx: HttpContext, formToken: unknown) {
  const cookie = csrfCookie(ctx)
  return (
    cookie !== undefined &&
    typeof formToken === 'string' &&
    safeEqual(cookie, formToken) &&
    ctx.request.header('sec-fetch-site') !== 'cross-site'
  )
}

/** The headers of every admin response: the strict CSP with this response's nonce, no sniffing, no caching. */
export function adminHeaders(ctx: HttpContext, nonce: string) {
  ctx.response.header('Content-Security-Policy', contentSecurityPolicy(nonce))
  ctx.response.header('X-Content-Type-Options', 'nosniff')
  ctx.response.header('Referrer-Policy', 'same-origin')
  ctx.response.header('Cache-Control', 'no-store')
}

/**
 * The answer to a decision form whose CSRF token was refused (the console's own check, or the
 * app's shield before the post reached the console): 403, the console's page saying nothing
 * was decided, with the way back to the item (its next load carries fresh tokens). Never a
 * redirect that shows nothing.
 */
export function refuseForm(ctx: HttpContext, base: string) {
  const nonce = newNonce()
  adminHeaders(ctx, nonce)
  const { runId, itemId } = ctx.params
  const park = String((ctx.request.body() as Record<string, unknown> | null)?.park ?? '')
  const item = `${base}/admin/items/${encodeURIComponent(String(runId))}/${encodeURIComponent(String(itemId))}`
  const back = /^[1-9][0-9]{0,9}$/.test(park) ? `${item}?park=${park}` : item
  ctx.response.status(403)
  return ctx.response.type('html').send(
    renderShell({
      base,
      nonce,
      title: 'Nothing was decided',
      current: 'queue',
      notice: NOTICES.csrf,
      main: `<h1>Nothing was decided</h1><p><a href="${e(back)}" id="back-to-item">Open the item again</a></p>`,
    })
  )
}

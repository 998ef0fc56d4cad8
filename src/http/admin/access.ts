import { randomBytes } from 'node:crypto'
import type { HttpContext } from '@adonisjs/core/http'
import { safeEqual } from '@adonisjs/core/helpers'
import type { AdminAuthorizer } from '../principal.js'
import { contentSecurityPolicy } from './layout.js'

/**
 * Who may use the admin console and how its responses are guarded, one place for every admin
 * view: denied by default, the CSRF cookie and its form token, the response headers.
 */

/** The CSRF cookie: signed, `SameSite=Strict`, HTTP only, scoped to the route prefix. */
export const CSRF_COOKIE = 'agent_stream_csrf'

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

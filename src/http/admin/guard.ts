import type { HttpContext } from '@adonisjs/core/http'
import type { AdminAuthorizer } from '../principal.js'

/**
 * Whether the app's `admin` hook lets this request in. Denied by default (no hook): answers 403
 * itself, so a caller just returns.
 */
export async function adminAllowed(ctx: HttpContext, authorize?: AdminAuthorizer) {
  if (authorize && (await authorize(ctx))) return true
  ctx.response.status(403).type('html').send('<p>Forbidden</p>')
  return false
}

/**
 * The admin pages' headers: a strict Content-Security-Policy (only the page's own nonce'd
 * script and style; no inline attribute, no other origin), no sniffing, no caching.
 */
export function adminHeaders(ctx: HttpContext, nonce: string) {
  ctx.response.header(
    'Content-Security-Policy',
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`
  )
  ctx.response.header('X-Content-Type-Options', 'nosniff')
  ctx.response.header('Cache-Control', 'no-store')
}

import { ExceptionHandler, type HttpContext } from '@adonisjs/core/http'
import { routeOf } from './package_routes.js'
import { outageRefusal } from './outage_refusal.js'
import {
  INVALID_CSRF_TOKEN,
  UNAUTHENTICATED,
  refusalBody,
  sendRefusal,
  type Refusal,
} from './refusal.js'

/**
 * The app's own middleware refusing a request on one of the package's routes, answered the way
 * the route's client reads it. AdonisJS hands an exception thrown by any middleware to the app's
 * exception handler at once (every middleware's call is caught where it runs), so no middleware
 * upstream ever sees it; the hook therefore sits on `ExceptionHandler.prototype.handle`, the
 * way `@adonisjs/session` overrides its validation renderer, and acts only on the package's
 * routes (`package_routes.ts`), before the app's handler renders anything:
 *
 * - `E_UNAUTHORIZED_ACCESS` (`@adonisjs/auth`, any guard) on a JSON or SSE route: 401
 *   `unauthenticated`, where the session guard would redirect to the login page (it does for
 *   any request not asking for JSON: an `EventSource`, a `fetch` with `Accept: *\/*`).
 * - `E_BAD_CSRF_TOKEN` (`@adonisjs/shield`) on a JSON route: 401 `unauthenticated` when the
 *   app's default guard finds nobody signed in (shield runs before the auth middleware), else
 *   403 `invalid_csrf_token`, where shield would redirect back; on the admin's form post, the
 *   console's page saying the form expired.
 * - an outage of the database (the app's own middleware reading it, e.g. the auth guard's user
 *   lookup): 503 `database_unavailable` with `Retry-After` (`outage_refusal.ts`, the answer the
 *   package's own handlers give themselves).
 *
 * Anything else, and every other route, goes to the app's handler as before. The app's handler
 * reaches this through `super.handle(error, ctx)` (the stock `app/exceptions/handler.ts` does).
 */

/** Exceptions of the app's middleware the package answers itself on its routes, by code. */
const REFUSALS: Record<string, Refusal> = {
  E_UNAUTHORIZED_ACCESS: UNAUTHENTICATED,
  E_BAD_CSRF_TOKEN: INVALID_CSRF_TOKEN,
}

/** What the package uses of `@adonisjs/auth`'s manager (an optional peer: typed by shape). */
interface AuthManagerShape {
  createAuthenticator(ctx: HttpContext): { check(): Promise<boolean> }
}

/**
 * Whether the request is signed in by the app's default guard, asked when shield refused it:
 * shield runs before the auth middleware, so a POST with no session at all (no session, so no
 * token either) would otherwise be told its token is bad rather than that it must sign in. An
 * app without `@adonisjs/auth`, or a guard that fails to answer, counts as signed in (the CSRF
 * refusal stands).
 */
async function signedIn(ctx: HttpContext) {
  const resolver = ctx.containerResolver as unknown as {
    hasBinding(name: string): boolean
    make(name: string): Promise<unknown>
  }
  if (!resolver.hasBinding('auth.manager')) return true
  try {
    const manager = (await resolver.make('auth.manager')) as AuthManagerShape
    return await manager.createAuthenticator(ctx).check()
  } catch {
    return true
  }
}

/** Whether the package answered `error` on `ctx` itself (then the response is set). */
async function answerRefusal(error: unknown, ctx: HttpContext): Promise<boolean> {
  const route = routeOf(ctx)
  const outage = route ? outageRefusal(error) : null
  if (outage && !ctx.response.headersSent) {
    sendRefusal(ctx.response, outage)
    return true
  }
  const code = (error as { code?: unknown } | null)?.code
  if (!route || typeof code !== 'string' || !Object.hasOwn(REFUSALS, code)) return false
  if (code === 'E_BAD_CSRF_TOKEN' && route.csrfRefused) {
    route.csrfRefused(ctx)
    return true
  }
  if (route.client !== 'json') return false
  let refusal = REFUSALS[code]
  if (code === 'E_BAD_CSRF_TOKEN' && !(await signedIn(ctx))) refusal = UNAUTHENTICATED
  ctx.response.status(refusal.status).json(refusalBody(refusal))
  return true
}

const INSTALLED = Symbol.for('adonis-agent-stream.host-refusals')

/** Put the hook on `ExceptionHandler` (once per process: later calls do nothing). */
export function installHostRefusals() {
  const prototype = ExceptionHandler.prototype as ExceptionHandler & { [INSTALLED]?: true }
  if (prototype[INSTALLED]) return
  const original = prototype.handle
  ExceptionHandler.macro('handle', async function (this: ExceptionHandler, error, ctx) {
    if (await answerRefusal(error, ctx)) return
    return original.call(this, error, ctx)
  })
  prototype[INSTALLED] = true
}

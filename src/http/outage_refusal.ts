import { StoreUnavailableError } from '../errors.js'
import { isTransientError } from '../store/transient.js'
import { refusalResponse, sendRefusal, type Refusal } from './refusal.js'

/**
 * The one answer of every package route, on both transports, to a database that cannot be
 * reached (`isTransientError`: refused, reset or killed connections, a server starting or
 * shutting down, an empty pool, a deadlock) or that stayed away past the outage bound
 * (`StoreUnavailableError`): 503 `database_unavailable` with `Retry-After`
 * (`refusalHeaders`), `{ code, message }` and nothing of the driver's text (no address, no
 * SQL). What the request asked is not applied: each of its writes is one transaction, rolled
 * back by the failure, and nothing retries it behind the client's back; the client retries.
 */
export const DATABASE_UNAVAILABLE: Readonly<Refusal> = Object.freeze({
  status: 503,
  code: 'database_unavailable',
  message: 'The database is unavailable: try again in a moment',
})

/** The refusal `error` calls for when it is an outage of the database, else `null`. */
export function outageRefusal(error: unknown): Readonly<Refusal> | null {
  if (error instanceof StoreUnavailableError || isTransientError(error)) {
    return DATABASE_UNAVAILABLE
  }
  return null
}

/** What an AdonisJS route handler sees of its context here (structural: no framework import). */
interface OutageContext {
  response: Parameters<typeof sendRefusal>[0] & { readonly headersSent: boolean }
}

/**
 * `handler`, answering an outage of the database itself (503, {@link outageRefusal}) instead
 * of throwing it to the app's exception handler, which would render a 500 (with the driver's
 * text in development). Once a response's headers are sent (a stream began) the error goes on
 * as before. Every AdonisJS route of the package is wrapped (`package_routes.ts`).
 */
export function answeringOutages<C extends OutageContext>(
  handler: (ctx: C) => unknown
): (ctx: C) => Promise<unknown> {
  return async (ctx: C) => {
    try {
      return await handler(ctx)
    } catch (error) {
      const refusal = outageRefusal(error)
      if (!refusal || ctx.response.headersSent) throw error
      return sendRefusal(ctx.response, refusal)
    }
  }
}

/** The Fetch transport's counterpart of {@link answeringOutages}: the refusal as a `Response`. */
export function outageResponse(error: unknown): Response {
  const refusal = outageRefusal(error)
  if (!refusal) throw error
  return refusalResponse(refusal)
}

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

/**
 * Run `answer` (a request's whole handling); a read (`GET`) that meets an outage before
 * anything was sent is run once more after a moment, on a fresh connection: a pooled
 * connection the server killed (a restart, `pg_terminate_backend`, `KILL`) fails only the
 * query that found it dead. A write is not run again here: its transaction was rolled back (or
 * its outcome is unknown), and the client's retry after the 503 is the one that can tell.
 */
async function withReadRetry<T>(method: string, sent: () => boolean, answer: () => Promise<T>) {
  try {
    return await answer()
  } catch (error) {
    if (method !== 'GET' || sent() || !outageRefusal(error)) throw error
    await new Promise((resolve) => setTimeout(resolve, READ_RETRY_MS))
    return answer()
  }
}

/** How long a read waits before its one retry. */
const READ_RETRY_MS = 50

/** What an AdonisJS route handler sees of its context here (structural: no framework import). */
interface OutageContext {
  request: { method(): string }
  response: Parameters<typeof sendRefusal>[0] & { readonly headersSent: boolean }
}

/**
 * `handler`, answering an outage of the database itself (503, {@link outageRefusal}) instead
 * of throwing it to the app's exception handler, which would render a 500 (with the driver's
 * text in development); a read is tried once more first (`withReadRetry`). Once a response's
 * headers are sent (a stream began) the error goes on as before. Every AdonisJS route of the
 * package is wrapped (`package_routes.ts`, the door controller).
 */
export function answeringOutages<C extends OutageContext>(
  handler: (ctx: C) => unknown
): (ctx: C) => Promise<unknown> {
  return async (ctx: C) => {
    const sent = () => ctx.response.headersSent
    try {
      return await withReadRetry(ctx.request.method(), sent, async () => handler(ctx))
    } catch (error) {
      const refusal = outageRefusal(error)
      if (!refusal || sent()) throw error
      return sendRefusal(ctx.response, refusal)
    }
  }
}

/**
 * The Fetch transport's counterpart of {@link answeringOutages}: `answer(request)`, a read
 * tried once more on an outage, else the refusal as a `Response`.
 */
export async function answeringOutagesFetch(
  request: Request,
  answer: (request: Request) => Promise<Response>
): Promise<Response> {
  try {
    return await withReadRetry(
      request.method,
      () => false,
      () => answer(request)
    )
  } catch (error) {
    const refusal = outageRefusal(error)
    if (!refusal) throw error
    return refusalResponse(refusal)
  }
}

import type { HttpContext } from '@adonisjs/core/http'
import type { Principal } from '../core/run.js'

/** Who an HTTP request acts for (the app's auth): `null` for nobody. */
export type PrincipalResolver = (ctx: HttpContext) => Principal | null | Promise<Principal | null>

/** Default: the authenticated user of `@adonisjs/auth` when there is one (`{ id }`), else nobody. */
export const defaultPrincipal: PrincipalResolver = (ctx) => {
  const user = (ctx as unknown as { auth?: { user?: { id?: unknown } } }).auth?.user
  return user && user.id !== undefined && user.id !== null ? { id: String(user.id) } : null
}

/**
 * Who a request acts for: the app's resolver (config `principal`), or {@link defaultPrincipal}.
 * Every controller asks through this one lookup.
 */
export async function resolvePrincipal(
  ctx: HttpContext,
  resolver: PrincipalResolver = defaultPrincipal
): Promise<Principal | null> {
  return (await resolver(ctx)) ?? null
}

/** Whether a request may use the admin page. Default: nobody (403). */
export type AdminAuthorizer = (ctx: HttpContext) => boolean | Promise<boolean>

/**
 * The name the admin console shows for a principal id (config `displayName`): asked once per id
 * per request, shown as text, never as markup.
 */
export type DisplayName = (principalId: string) => string | Promise<string>

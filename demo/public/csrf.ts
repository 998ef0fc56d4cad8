/**
 * The CSRF token of a page an AdonisJS app with `@adonisjs/shield` serves, as the header shield
 * reads: the `<meta name="csrf-token">` the page renders (Edge: `{{ csrfMeta() }}`) as
 * `X-CSRF-TOKEN`, else the `XSRF-TOKEN` cookie (shield's `enableXsrfCookie`) as `X-XSRF-TOKEN`;
 * none when the page has neither (an app without shield). Read at every request, so a token
 * the app renews is always the current one. The README's Security section shows this function.
 */
export function csrfHeaders(): Record<string, string> {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content
  if (meta) return { 'X-CSRF-TOKEN': meta }
  const cookie = document.cookie.split('; ').find((c) => c.startsWith('XSRF-TOKEN='))
  return cookie ? { 'X-XSRF-TOKEN': cookie.slice('XSRF-TOKEN='.length) } : {}
}

/**
 * What the demo's checks share (`npm run demo -- --check`, and `--agent <name> --check`): the
 * failure that names its step, and the admin page's approve form posted as a person would.
 */
export class CheckFailed extends Error {}

export function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message)
}

const unescapeHtml = (value: string) =>
  value
    .replace(/&quot;/g, '"')
    .replace(/&#0?39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')

/** The page's forms: action and hidden inputs. */
function forms(html: string) {
  return [...html.matchAll(/<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].map(
    ([, action, inner]) => {
      const fields: Record<string, string> = {}
      for (const [input] of inner.matchAll(/<input\b[^>]*>/g)) {
        const name = /\bname="([^"]*)"/.exec(input)?.[1]
        const value = /\bvalue="([^"]*)"/.exec(input)?.[1]
        if (name && value !== undefined && /type="hidden"/.test(input))
          fields[unescapeHtml(name)] = unescapeHtml(value)
      }
      return { action: unescapeHtml(action), fields }
    }
  )
}

/**
 * Approve an item as a person on the admin page would: load the page (CSRF cookie + the form's
 * hidden `agent_stream_csrf`), post the item's approve form with the cookie, expect the 303 back to the page.
 */
export async function approveInAdmin(base: string, runId: string) {
  // The queue filtered by run lists its one pending item (the id is the model's tool-call id);
  // the item's own view holds its decision forms.
  const queue = await fetch(`${base}/admin?run=${encodeURIComponent(runId)}`)
  expect(queue.ok, `admin queue: HTTP ${queue.status}`)
  const under = `${base}/admin/items/${encodeURIComponent(runId)}/`
  const html = await queue.text()
  const link = [...html.matchAll(/href="([^"]+)"/g)]
    .map((m) => unescapeHtml(m[1]))
    .find((href) => new URL(href, base).href.startsWith(under))
  expect(link, `admin queue: no item of run ${runId}`)
  const page = await fetch(new URL(link, base))
  expect(page.ok, `admin page: HTTP ${page.status}`)
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith('agent_stream_csrf='))
  expect(cookie, 'admin page: no CSRF cookie')
  const form = forms(await page.text()).find((f) => {
    const href = new URL(f.action, base).href
    return href.startsWith(under) && href.endsWith('/approve')
  })
  expect(form, `admin page: no approve form for run ${runId}`)
  const response = await fetch(new URL(form.action, base), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'cookie': cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...form.fields, reason: 'Approved by the demo check' }),
  })
  const location = response.headers.get('location') ?? ''
  expect(
    response.status === 303 && location.includes('notice=approved'),
    `admin approve: HTTP ${response.status} -> ${location || '(no redirect)'}`
  )
  return { action: new URL(form.action, base).pathname, location }
}

import string from '@adonisjs/core/helpers/string'
import { DateTime } from 'luxon'
import type { PendingItem } from '../../parking/types.js'
import { optionToken, questionField } from './form.js'

/** Every attribute value goes through this: text, never markup. */
export const e = (value: unknown) => string.escapeHTML(String(value ?? ''))

/** The bidi formatting characters: embeddings, overrides, isolates and marks (UAX #9). */
export const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g

/**
 * Every value shown as text goes through this: escaped, in its own `<bdi>` (a bidi isolate with
 * `dir=auto`: nothing in it reorders the text around it), and each bidi control shown as a
 * visible marker (`[U+202E]`) instead of acting: a title with a right-to-left override renders
 * in the order it was written, and the person sees that it held one.
 */
export const t = (value: unknown) =>
  `<bdi>${e(value).replace(
    BIDI_CONTROLS,
    (c) =>
      `<span class="bidi">[U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]</span>`
  )}</bdi>`

/** Notices the page shows after a decision; chosen by code, never echoed from the request. */
export const NOTICES: Record<string, string> = {
  approved: 'Approved: the run continues.',
  rejected: 'Rejected: the call will not run.',
  answered: 'Answered: the run continues.',
  E_DECISION_FORBIDDEN: 'You may not decide this item.',
  E_PARKED_NOT_FOUND: 'This item no longer exists.',
  E_DECISION_CONFLICT: 'Someone decided this item first.',
  E_DECISION_LAPSED: 'This item expired before the decision.',
  E_DECISION_MISMATCH: 'That decision does not fit this item.',
  E_INVALID_DECISION: 'The answer does not fit the question set.',
  csrf: 'The form expired: reload the page and try again.',
}

export interface PageContext {
  /** Route prefix, e.g. `/agent`. */
  base: string
  view: 'pending' | 'decided'
  /** Which page of the list, from 1; `more` when a next page may hold more items. */
  page: number
  more: boolean
  csrf: string
  nonce: string
  notice?: string
  now: DateTime
}

function timeLeft(item: PendingItem, now: DateTime) {
  if (!item.expiresAt) return 'no expiry'
  const at = DateTime.fromISO(item.expiresAt)
  return at <= now ? 'expired' : `expires ${at.toRelative({ base: now })}`
}

function form(ctx: PageContext, item: PendingItem, action: string, body: string) {
  const url = `${ctx.base}/admin/items/${encodeURIComponent(item.runId)}/${encodeURIComponent(item.itemId)}/${action}`
  return `<form method="post" action="${e(url)}" class="decide">
<input type="hidden" name="_csrf" value="${e(ctx.csrf)}"><input type="hidden" name="park" value="${e(item.park)}">
${body}</form>`
}

function questions(ctx: PageContext, item: PendingItem) {
  const request = item.request!
  const fields = request.questions
    .map((q, index) => {
      const type = q.multiple ? 'checkbox' : 'radio'
      const field = questionField(index)
      const options = q.options
        .map(
          (o, at) =>
            `<label><input type="${type}" name="${field}" value="${optionToken(at)}"${q.defaults?.includes(o.value) ? ' checked' : ''}> ${t(o.label)}</label>`
        )
        .join(' ')
      const free = q.allowFreeText
        ? `<input type="text" name="${field}_text" maxlength="2000" dir="auto" aria-label="${e(q.prompt)}">`
        : ''
      return `<fieldset><legend>${t(q.prompt)}</legend>${options}${free}</fieldset>`
    })
    .join('')
  return (
    form(ctx, item, 'answer', `${fields}<button type="submit">Answer</button>`) +
    form(ctx, item, 'reject', `<button type="submit">Skip</button>`)
  )
}

function card(ctx: PageContext, item: PendingItem) {
  const title =
    item.kind === 'approval'
      ? `Approve <code>${t(item.toolName)}</code>?`
      : `Question set <code>${t(item.itemId)}</code>`
  const confirmation =
    item.kind === 'approval' && item.confirmation
      ? `<p class="copy"><strong>${t(item.confirmation.title)}</strong> ${t(item.confirmation.description)}</p>`
      : item.request?.preamble
        ? `<p class="copy">${t(item.request.preamble)}</p>`
        : ''
  const who =
    item.approver === 'requester'
      ? `the requester${item.requesterId ? ` (${t(item.requesterId)})` : ''}`
      : `role <code>${t(item.approver)}</code>`
  const meta = `<dl>
<dt>Run</dt><dd><code>${t(item.streamRunId)}</code></dd>
<dt>Parked run</dt><dd><code>${t(item.runId)}</code></dd>
<dt>Who may decide</dt><dd>${who}</dd>
<dt>Asked</dt><dd>${t(DateTime.fromISO(item.createdAt).toRelative({ base: ctx.now }))}</dd>
<dt>Time left</dt><dd>${t(timeLeft(item, ctx.now))}</dd>
</dl>`
  const input =
    item.kind === 'approval'
      ? `<pre class="input">${t(JSON.stringify(item.input, null, 2))}</pre>`
      : ''
  let actions = ''
  if (ctx.view === 'decided') {
    actions = `<p class="decided">${t(item.status)}${item.decidedBy ? ` by ${t(item.decidedBy)}` : ''}${item.decidedVia ? ` via ${t(item.decidedVia)}` : ''}${item.reason ? `: ${t(item.reason)}` : ''}</p>`
  } else if (item.kind === 'approval') {
    const reason = `<input type="text" name="reason" maxlength="2000" dir="auto" placeholder="Reason (optional)">`
    actions =
      form(ctx, item, 'approve', `${reason}<button type="submit">Approve</button>`) +
      form(ctx, item, 'reject', `${reason}<button type="submit">Reject</button>`)
  } else {
    actions = questions(ctx, item)
  }
  return `<article class="item" data-run="${e(item.runId)}" data-item="${e(item.itemId)}">
<h2>${title}</h2>${confirmation}${meta}${input}${actions}</article>`
}

/** The list of items (the part the page refreshes live). */
export function renderItems(ctx: PageContext, items: PendingItem[]) {
  if (items.length === 0)
    return `<p class="empty">${ctx.view === 'pending' ? 'Nothing is waiting for a decision.' : 'No decisions yet.'}</p>`
  return items.map((item) => card(ctx, item)).join('\n')
}

/** Links to the newer and older pages of the list, when there are. */
function pages(ctx: PageContext) {
  const link = (page: number, label: string) =>
    `<a href="${e(`${ctx.base}/admin?view=${ctx.view}&page=${page}`)}">${label}</a>`
  const links = [
    ...(ctx.page > 1 ? [link(ctx.page - 1, 'Newer')] : []),
    ...(ctx.more ? [link(ctx.page + 1, 'Older')] : []),
  ]
  return links.length > 0 ? `<nav class="pages">${links.join(' ')}</nav>` : ''
}

/** The whole admin page: pending (or decided) items, newest first, a page at a time, updated live. */
export function renderPage(ctx: PageContext, items: PendingItem[]) {
  const notice =
    ctx.notice && NOTICES[ctx.notice]
      ? `<p class="notice" role="status">${e(NOTICES[ctx.notice])}</p>`
      : ''
  const tab = (view: string, label: string) =>
    `<a href="${e(`${ctx.base}/admin?view=${view}`)}"${ctx.view === view ? ' aria-current="page"' : ''}>${label}</a>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent approvals</title>
<style nonce="${e(ctx.nonce)}">
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:900px;padding:1rem;color:#222}
nav a{margin-right:1rem}nav a[aria-current]{font-weight:bold}
.item{border:1px solid #ccc;border-radius:6px;padding:.75rem 1rem;margin:1rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.5rem 0}dt{color:#666}dd{margin:0}
pre{background:#f6f6f6;padding:.5rem;overflow:auto}form.decide{display:inline-block;margin:.25rem 1rem .25rem 0}
fieldset{border:1px solid #ddd;margin:.25rem 0}.notice{background:#eef6ee;padding:.5rem}.decided{font-style:italic}
bdi{unicode-bidi:isolate}.bidi{color:#a00;background:#fee;font:bold .8em monospace}
</style></head><body>
<h1>Agent approvals</h1>
<nav>${tab('pending', 'Pending')}${tab('decided', 'History')}</nav>
${notice}
<main id="items" data-view="${e(ctx.view)}">${renderItems(ctx, items)}</main>
${pages(ctx)}
<script nonce="${e(ctx.nonce)}">
// Live updates: refresh the list unless the person is filling in a form.
const list = document.getElementById('items')
let last = null
const url = ${JSON.stringify(`${ctx.base}/admin/items?view=${ctx.view}&page=${ctx.page}`).replace(/</g, '\\u003c')}
setInterval(async () => {
  if (list.contains(document.activeElement) && document.activeElement.tagName !== 'BODY') return
  try {
    const response = await fetch(url, { credentials: 'same-origin' })
    if (response.ok) {
      const html = await response.text()
      if (html !== last) {
        last = html
        list.innerHTML = html
      }
    }
  } catch {}
}, 2000)
</script>
</body></html>`
}

import type { DateTime } from 'luxon'
import type { QueueCounts, QueueKey } from '../../parking/queue.js'
import { lapsed } from '../../parking/policy.js'
import { QUESTION_SET } from '../../parking/queue.js'
import type { ParkedItem } from '../../parking/types.js'
import { encodeKey, listHref, type ListQuery } from './filters.js'
import { e, plain, t } from './layout.js'
import type { PrincipalNames } from './names.js'

/**
 * The queue (pending items, by when asked) and the history (decided ones, by when decided): a
 * filter form, counts per filter value, a compact table, keyset paging. The part a live update
 * replaces (`#list`) holds the counts, the table and the pager only: a form being filled in is
 * never touched.
 */

export interface ListContext {
  base: string
  view: 'pending' | 'decided'
  query: ListQuery
  items: ParkedItem[]
  next: QueueKey | null
  counts: QueueCounts
  now: DateTime
  names: PrincipalNames
}

/** Where a view lives. */
export const viewPath = (base: string, view: 'pending' | 'decided') =>
  `${base}/admin${view === 'pending' ? '' : '/history'}`

/** The item view of an item. */
export const itemHref = (base: string, item: Pick<ParkedItem, 'runId' | 'itemId' | 'park'>) =>
  `${base}/admin/items/${encodeURIComponent(item.runId)}/${encodeURIComponent(item.itemId)}?park=${item.park}`

/**
 * One formatter for every relative time of a page: luxon's `toRelative` builds a new
 * `Intl.RelativeTimeFormat` per call (about a millisecond each), a page shows a hundred.
 */
const RELATIVE = new Intl.RelativeTimeFormat('en', { numeric: 'always' })
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
]

/** `in 5 minutes`, `3 hours ago`: the largest whole unit (as luxon's `toRelative`). */
export function relative(at: number, now: number) {
  const delta = at - now
  for (const [unit, ms] of UNITS) {
    if (Math.abs(delta) >= ms || unit === 'second')
      return RELATIVE.format(Math.trunc(delta / ms), unit)
  }
  return ''
}

/** `12 minutes ago`, in a `<time>` carrying the instant. */
export function when(iso: string | null | undefined, now: DateTime) {
  if (!iso) return '<span class="muted">—</span>'
  return `<time datetime="${e(iso)}" title="${e(iso)}">${t(relative(Date.parse(iso), now.toMillis()))}</time>`
}

/** Time left before an item lapses. */
export function timeLeft(item: ParkedItem, now: DateTime) {
  if (!item.expiresAt) return '<span class="muted">no expiry</span>'
  const at = Date.parse(item.expiresAt)
  if (lapsed({ expiresAt: at }, now.toMillis())) return '<span class="bad">expired</span>'
  return `<time datetime="${e(item.expiresAt)}">${t(relative(at, now.toMillis()))}</time>`
}

/** Who may decide an item (by its approver; the requester by display name). */
export function approverText(item: ParkedItem, names: PrincipalNames) {
  return item.approver === 'requester'
    ? `requester${item.requesterId ? ` <span class="muted">(${names.html(item.requesterId)})</span>` : ''}`
    : `role <code>${t(item.approver)}</code>`
}

/** Every principal id a list of items shows (requesters, deciders), for `PrincipalNames.load`. */
export const shownPrincipals = (items: ParkedItem[]) =>
  items.flatMap((item) => [item.requesterId, item.decidedBy])

/** What was asked: the tool, or the question set. */
export const whatText = (item: ParkedItem) =>
  item.kind === 'approval'
    ? `<code>${t(item.toolName)}</code>`
    : `question set <code>${t(item.itemId)}</code>`

/** A key for a row (live updates keep the selection on it). */
export const rowKey = (item: ParkedItem) => `${item.runId}\u0000${item.itemId}\u0000${item.park}`

function row(ctx: ListContext, item: ParkedItem) {
  const link = `<a class="open" href="${e(itemHref(ctx.base, item))}">${whatText(item)}</a>`
  const cells =
    ctx.view === 'pending'
      ? [
          link,
          approverText(item, ctx.names),
          `<code>${t(item.threadId)}</code>`,
          when(item.createdAt, ctx.now),
          timeLeft(item, ctx.now),
        ]
      : [
          link,
          t(item.status),
          t(item.decidedVia ?? ''),
          item.decidedBy ? ctx.names.html(item.decidedBy) : '<span class="muted">—</span>',
          item.reason ? t(item.reason) : '<span class="muted">—</span>',
          item.editedInput !== undefined ? 'edited input' : '',
          when(item.decidedAt, ctx.now),
        ]
  return `<tr data-key="${e(rowKey(item))}">${cells.map((c) => `<td>${c}</td>`).join('')}</tr>`
}

/** The live part: counts, the table, the pager. */
export function renderListBody(ctx: ListContext) {
  const path = viewPath(ctx.base, ctx.view)
  const head =
    ctx.view === 'pending'
      ? ['Tool or question set', 'Who may decide', 'Thread', 'Asked', 'Time left']
      : ['Tool or question set', 'Outcome', 'How', 'Who decided', 'Reason', 'Input', 'Decided']
  const caption = ctx.view === 'pending' ? 'Items waiting for a decision' : 'Decided items'
  const table =
    ctx.items.length === 0
      ? `<p class="empty">${ctx.view === 'pending' ? 'Nothing is waiting for a decision.' : 'No decisions match.'}</p>`
      : `<table id="rows"><caption class="sr-only">${caption}</caption><thead><tr>${head.map((h) => `<th scope="col">${h}</th>`).join('')}</tr></thead>
<tbody>${ctx.items.map((item) => row(ctx, item)).join('\n')}</tbody></table>`
  const links = [
    ...(ctx.query.after
      ? [`<a href="${e(listHref(path, ctx.query))}" rel="first">First page</a>`]
      : []),
    ...(ctx.next
      ? [
          `<a href="${e(listHref(path, ctx.query, { after: encodeKey(ctx.next) }))}" rel="next">Next page</a>`,
        ]
      : []),
  ]
  const total = `<p class="total"><strong>${ctx.counts.total}</strong> ${ctx.view === 'pending' ? 'waiting' : 'decided'}${ctx.query.after ? ' (a later page)' : ''}</p>`
  return `${total}${table}${links.length ? `<nav class="pages" aria-label="Pages">${links.join('')}</nav>` : ''}`
}

function select(
  name: string,
  label: string,
  current: string | undefined,
  options: [string, string][]
) {
  const has = current !== undefined && options.some(([v]) => v === current)
  const all = [
    ['', 'Any'] as [string, string],
    ...(current !== undefined && !has ? [[current, current] as [string, string]] : []),
    ...options,
  ]
  return `<label>${label}<select name="${name}">${all
    .map(
      ([v, l]) =>
        `<option value="${e(v)}"${v === (current ?? '') ? ' selected' : ''}>${plain(l)}</option>`
    )
    .join('')}</select></label>`
}

function input(name: string, label: string, current: string | undefined, size = 18) {
  return `<label>${label}<input type="search" name="${name}" value="${e(current ?? '')}" size="${size}" maxlength="191" dir="auto" autocomplete="off"></label>`
}

const counted = (list: [string, number][], labels: Record<string, string> = {}) =>
  list.map(([v, n]) => [v, `${labels[v] ?? v} (${n})`] as [string, string])

/** The filter form (a GET form: every filter is a link too). */
function filters(ctx: ListContext) {
  const q = ctx.query
  const c = ctx.counts
  const fields = [
    select('order', 'Order', q.order, [
      ['newest', 'Newest first'],
      ['oldest', 'Oldest first'],
    ]).replace('<option value="">Any</option>', ''),
    ctx.view === 'decided'
      ? select('status', 'Status', q.status, counted(c.status))
      : // The queue is the pending items; any other status is the history's (a redirect there).
        select('status', 'Status', q.status, [
          ['approved', 'approved (history)'],
          ['rejected', 'rejected (history)'],
          ['answered', 'answered (history)'],
          ['expired', 'expired (history)'],
          ['cancelled', 'cancelled (history)'],
        ]).replace('>Any</option>', `>pending (${c.total})</option>`),
    select('tool', 'Tool', q.tool, counted(c.tool)),
    select('approver', 'Who may decide', q.approver, counted(c.approver)),
    select('age', 'Asked', q.age, [
      ['lt1h', `within the hour (${c.age.lt1h})`],
      ['1h-1d', `1 hour to 1 day ago (${c.age.h1to1d})`],
      ['gt1d', `over a day ago (${c.age.gt1d})`],
    ]),
    ...(ctx.view === 'decided'
      ? [
          select(
            'via',
            'How',
            q.via,
            counted(c.via, {
              chat: 'chat',
              admin: 'admin',
              api: 'API',
              expiry: 'expiry',
              cancel: 'cancel',
              system: 'system',
            })
          ),
          input('by', 'Who decided', q.by, 12),
          input('reason', 'Reason contains', q.reason),
        ]
      : []),
    input('thread', 'Thread', q.thread),
    input('run', 'Run', q.run),
  ]
  return `<form class="filters" method="get" action="${e(viewPath(ctx.base, ctx.view))}" role="search" aria-label="Filters">
${fields.join('\n')}
<button type="submit">Apply</button> <a href="${e(viewPath(ctx.base, ctx.view))}">Clear</a></form>`
}

export { QUESTION_SET }

/** The `<main>` of the queue or the history. */
export function renderList(ctx: ListContext) {
  const title = ctx.view === 'pending' ? 'Queue' : 'History'
  const keys =
    ctx.view === 'pending'
      ? `<p class="muted keys">Keys: <kbd>j</kbd>/<kbd>k</kbd> move, <kbd>Enter</kbd> open, <kbd>/</kbd> filters. <span class="live" id="live" aria-live="polite"></span></p>`
      : ''
  return `<h1>${title}</h1>
${filters(ctx)}
${keys}
<section id="list" aria-label="${title} items" data-view="${e(ctx.view)}">${renderListBody(ctx)}</section>`
}

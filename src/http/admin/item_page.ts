import type { DateTime } from 'luxon'
import type { ParkedItem } from '../../parking/types.js'
import { optionToken, questionField } from './form.js'
import { e, inertJson, plain, t } from './layout.js'
import { approverText, itemHref, timeLeft, when, whatText } from './list_page.js'
import type { PrincipalNames } from './names.js'
import type { Deciding } from './who_decides.js'

/**
 * One item in context: what was asked and by which run, the conversation up to the ask (already
 * rendered through the public projection, `conversation.ts`), the confirmation copy, the input as
 * formatted JSON, and the decision forms: edit-then-approve and reject for an approval (the
 * edited JSON is what the tool receives, validated like the API), the question set's form with
 * every question answerable. The forms (and their keys) are shown only to a viewer who may
 * decide; anyone else reads why not. Beside it, the queue, updated live.
 */

export interface ItemContext {
  base: string
  /** The forms' hidden CSRF fields, `[name, value]` (`access.ts`, `csrfFields`). */
  csrf: Array<[name: string, value: string]>
  item: ParkedItem
  conversation: string
  /** The next item of the queue after this one (newest first), for `n`. */
  next: ParkedItem | null
  now: DateTime
  /** Whether the viewer may decide it (`who_decides.ts`). */
  deciding: Deciding
  names: PrincipalNames
}

function form(ctx: ItemContext, action: string, body: string, label: string) {
  const { item } = ctx
  const url = `${ctx.base}/admin/items/${encodeURIComponent(item.runId)}/${encodeURIComponent(item.itemId)}/${action}`
  return `<form method="post" action="${e(url)}" class="decide" id="form-${action}" aria-label="${e(label)}">
${ctx.csrf.map(([name, value]) => `<input type="hidden" name="${e(name)}" value="${e(value)}">`).join('')}<input type="hidden" name="park" value="${e(item.park)}">
${body}</form>`
}

function approvalForms(ctx: ItemContext) {
  // Bidi controls as JSON escapes: the same JSON, parsed to the same value, but nothing in the
  // editor reorders what the person reads.
  const input = inertJson(ctx.item.input, 2)
  const approve = form(
    ctx,
    'approve',
    `<label for="edit-input">Input the tool receives (JSON; edit it before approving)</label>
<textarea id="edit-input" name="input" spellcheck="false" dir="ltr" rows="${Math.min(20, input.split('\n').length + 1)}">${e(input)}</textarea>
<label for="approve-reason">Reason (optional)</label>
<input id="approve-reason" type="text" name="reason" maxlength="2000" dir="auto">
<button type="submit" class="primary">Approve <kbd>a</kbd></button>`,
    'Approve'
  )
  const reject = form(
    ctx,
    'reject',
    `<label for="reject-reason">Reason (optional)</label>
<input id="reject-reason" type="text" name="reason" maxlength="2000" dir="auto">
<button type="submit" class="danger">Reject <kbd>r</kbd></button>`,
    'Reject'
  )
  return approve + reject
}

function questionForms(ctx: ItemContext) {
  const request = ctx.item.request!
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
        ? `<label>Your answer <input type="text" name="${field}_text" maxlength="2000" dir="auto" aria-label="${plain(q.prompt)}"></label>`
        : ''
      return `<fieldset><legend>${t(q.prompt)}</legend>${options}${free}</fieldset>`
    })
    .join('')
  return (
    form(
      ctx,
      'answer',
      `${fields}<button type="submit" class="primary">Answer <kbd>a</kbd></button>`,
      'Answer'
    ) +
    form(ctx, 'reject', `<button type="submit" class="danger">Skip <kbd>r</kbd></button>`, 'Skip')
  )
}

function outcome(item: ParkedItem, now: DateTime, names: PrincipalNames) {
  const edited =
    item.editedInput !== undefined
      ? `<h3>Input it ran with (edited)</h3><pre class="input" tabindex="0">${t(JSON.stringify(item.editedInput, null, 2))}</pre>`
      : ''
  return `<p class="decided" role="note"><strong>${t(item.status)}</strong>${item.decidedBy ? ` by ${names.html(item.decidedBy)}` : ''}${item.decidedVia ? ` via ${t(item.decidedVia)}` : ''} ${when(item.decidedAt, now)}${item.reason ? `: ${t(item.reason)}` : ''}</p>${edited}`
}

/** The `<main>` of the item view. */
export function renderItem(ctx: ItemContext) {
  const { item } = ctx
  const title = item.kind === 'approval' ? `Approve ${whatText(item)}?` : `Answer ${whatText(item)}`
  const copy =
    item.kind === 'approval' && item.confirmation
      ? `<p class="copy"><strong>${t(item.confirmation.title)}</strong> ${t(item.confirmation.description)}</p>`
      : item.request?.preamble
        ? `<p class="copy">${t(item.request.preamble)}</p>`
        : ''
  const meta = `<dl class="meta">
<dt>Run</dt><dd><code>${t(item.streamRunId)}</code></dd>
<dt>Parked run</dt><dd><code>${t(item.runId)}</code> (park ${e(item.park)})</dd>
<dt>Thread</dt><dd><code>${t(item.threadId)}</code></dd>
<dt>Who may decide</dt><dd>${approverText(item, ctx.names)}</dd>
<dt>Asked</dt><dd>${when(item.createdAt, ctx.now)}</dd>
<dt>Time left</dt><dd>${item.status === 'pending' ? timeLeft(item, ctx.now) : '—'}</dd>
</dl>`
  const input =
    item.kind === 'approval'
      ? `<h2>Input</h2><pre class="input" tabindex="0" aria-label="Input as asked">${t(JSON.stringify(item.input, null, 2))}</pre>`
      : ''
  const decide =
    item.status !== 'pending'
      ? outcome(item, ctx.now, ctx.names)
      : !ctx.deciding.may
        ? `<p class="cannot" id="cannot-decide"><strong>You may not decide this item.</strong> ${ctx.deciding.why}</p>`
        : item.kind === 'approval'
          ? approvalForms(ctx)
          : questionForms(ctx)
  const next = ctx.next
    ? `<a id="next-item" href="${e(itemHref(ctx.base, ctx.next))}">Next item <kbd>n</kbd></a>`
    : '<span class="muted">No next item</span>'
  return `<div class="split"><article class="item" aria-labelledby="item-title" data-run="${e(item.runId)}" data-item="${e(item.itemId)}">
<p class="crumbs"><a href="${e(`${ctx.base}/admin`)}">← Queue</a> · ${next}</p>
<h1 id="item-title">${title}</h1>${copy}${meta}
<h2>Conversation up to the ask</h2><div class="conversation" role="region" aria-label="Conversation" tabindex="0">${ctx.conversation}</div>
${input}
<h2>Decision</h2><div class="decision">${decide}</div>
</article>
<aside class="side" aria-label="Queue"><h2>Waiting</h2><div id="list" data-view="panel"></div></aside></div>`
}

/** The queue beside an item: the first page, compact. */
export function renderPanel(
  base: string,
  items: ParkedItem[],
  total: number,
  names: PrincipalNames,
  current?: string
) {
  if (items.length === 0) return '<p class="empty">Nothing is waiting.</p>'
  return `<p class="total"><strong>${total}</strong> waiting</p><ul class="panel">${items
    .map(
      (item) =>
        `<li><a href="${e(itemHref(base, item))}"${current === `${item.runId}\u0000${item.itemId}\u0000${item.park}` ? ' aria-current="page"' : ''}>${whatText(item)}</a> <span class="muted">${approverText(item, names)}</span></li>`
    )
    .join('')}</ul>`
}

import { DateTime } from 'luxon'
import type { DeliveryRow } from '../../store/webhook_deliveries.js'
import { e, renderShell, t } from './layout.js'
import { runHref } from './runs_page.js'

/** What the dead letters page shows besides its rows. */
export interface WebhooksPageContext {
  base: string
  nonce: string
  /** Whether any endpoint is configured (webhooks on). */
  enabled: boolean
  /** The hidden CSRF fields of each retry form. */
  fields: Array<[name: string, value: string]>
  /** The outcome of a retry just posted (a code of {@link RETRY_NOTICES}). */
  retried?: string
}

/** What a retry's redirect may say (`?retried=`), by code; anything else shows nothing. */
export const RETRY_NOTICES: Record<string, { text: string; refused: boolean }> = {
  queued: { text: 'Queued again: the delivery is retried now.', refused: false },
  not_dead: { text: 'That delivery is not dead (retried or delivered already).', refused: true },
  csrf: {
    text: 'The form expired or did not come from this console: nothing was retried.',
    refused: true,
  },
}

const when = (millis: number) =>
  DateTime.fromMillis(millis, { zone: 'utc' }).toFormat('yyyy-LL-dd HH:mm:ss')

/** The receiver's host (never its path or query: they may carry a token). */
export function endpointHost(url: string) {
  try {
    return new URL(url).host
  } catch {
    return '(invalid)'
  }
}

/**
 * The console's Webhooks page: every dead delivery (a dead letter: `maxAttempts` failed) with its
 * event, the endpoint's host, the run, the attempts, the last failure's code and when, and a
 * Retry button (a form with the console's CSRF token).
 */
export function renderWebhooksPage(ctx: WebhooksPageContext, dead: DeliveryRow[]) {
  const notice = ctx.retried ? RETRY_NOTICES[ctx.retried] : undefined
  const hidden = ctx.fields
    .map(([name, value]) => `<input type="hidden" name="${e(name)}" value="${e(value)}">`)
    .join('')
  const rows = dead
    .map(
      (row) => `<tr data-delivery="${e(row.id)}">
<td><code>${e(row.eventType)}</code></td>
<td>${t(endpointHost(row.endpoint))}</td>
<td><a href="${e(runHref(ctx.base, row.streamRunId))}">${t(row.runId)}</a></td>
<td>${e(row.attempts)}</td>
<td><code>${e(row.lastError ?? '')}</code></td>
<td>${e(when(row.createdAt))}</td>
<td><code>${e(row.id)}</code></td>
<td><form method="post" action="${e(`${ctx.base}/admin/webhooks/${encodeURIComponent(row.id)}/retry`)}">${hidden}<button type="submit">Retry</button></form></td>
</tr>`
    )
    .join('')
  const body = !ctx.enabled
    ? '<p>No webhook endpoint is configured (<code>webhooks.endpoints</code>).</p>'
    : dead.length === 0
      ? '<p id="no-dead">No dead deliveries.</p>'
      : `<table class="dead"><caption class="sr-only">Dead deliveries</caption><thead><tr>
<th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">Run</th><th scope="col">Attempts</th>
<th scope="col">Last error</th><th scope="col">Event time (UTC)</th><th scope="col">webhook-id</th><th scope="col">Retry</th>
</tr></thead><tbody>${rows}</tbody></table>`
  return renderShell({
    base: ctx.base,
    nonce: ctx.nonce,
    title: 'Webhooks',
    current: 'webhooks',
    notice,
    main: `<h1>Webhooks: dead deliveries</h1>
<p class="muted">Deliveries every attempt of which failed. A retry sends the same event again, with the same <code>webhook-id</code>.</p>${body}`,
  })
}

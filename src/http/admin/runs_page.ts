import { DateTime } from 'luxon'
import { RUN_STATUSES, type RunSummary } from '../../store/run_list.js'
import { e, renderShell, t } from './layout.js'

/** The ages the runs list filters by (started at most this long ago), in milliseconds. */
export const RUN_AGES: Record<string, number> = {
  '1h': 3_600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
}

/** The runs list's filters, as validated from the query string. */
export interface RunsQuery {
  status?: string
  thread?: string
  age?: string
  tool?: string
  /** Keyset: `<createdAt>~<runId>` of the last run of the previous page. */
  before?: string
}

export interface RunsPageContext {
  base: string
  nonce: string
  query: RunsQuery
  /** The keyset of the next (older) page, when there may be one. */
  next?: string
  /** A refusal to show instead of the list (names the rule, never the value). */
  problem?: string
}

/** The CSS of the runs pages (one nonce'd `<style>`; the strict CSP allows nothing inline else). */
export const RUNS_CSS = `
main{overflow-wrap:anywhere}table{table-layout:fixed}th,td{overflow-wrap:anywhere}
.status{display:inline-block;padding:0 .4rem;border-radius:3px;font-size:.85em;background:#e8eef9;color:#10325f}
.status.failed{background:#fde7e7;color:#8a0000}.status.cancelled{background:#eee;color:#333}
.status.parked{background:#fff3d6;color:#5c3b00}.status.finished{background:#e3f4e3;color:#164d16}
.problem{background:#fde7e7;padding:.5rem}
.figure{overflow-x:auto;border:1px solid #ddd;border-radius:6px;padding:.25rem}
svg.timeline{font:12px system-ui,sans-serif;background:#fff}
svg .tick{stroke:#e4e4e4}svg .time{fill:#555}svg .rail{stroke:#ccc}
svg .name{font-weight:bold;fill:#1a1a1a}svg .id{fill:#555;font:11px monospace}
svg .segment{fill:#3b6fd8}svg .segment.open{fill:#7fa3ea}svg .scope{fill:#7b57c2}svg .scope.open{fill:#ad95db}
svg .park rect{fill:#f2b233;fill-opacity:.55;stroke:#a66f00}svg .park.pending rect{fill-opacity:.25;stroke-dasharray:4 2}
svg .park .label{fill:#5c3b00;font-weight:bold}svg .decision{fill:#1a1a1a}svg .who{fill:#1a1a1a}
svg .cross{stroke:#c00000;stroke-width:3}svg .failure .mark{fill:#8a0000;font-weight:bold}
svg .cancel .cross{stroke:#444}svg .cancel .mark{fill:#333}svg .legend text{fill:#333}
.decisions th{white-space:normal;overflow-wrap:break-word}.decisions col.what{width:13%}.decisions col.run{width:19%}.decisions col.park{width:6%}
.decisions col.time{width:9%}.decisions col.status{width:9%}.decisions col.who{width:9%}
.decisions col.via{width:7%}.decisions col.waited{width:8%}.decisions col.why{width:11%}
.transcript{border-left:3px solid #ddd;padding-left:.75rem}
.transcript .sub{border-left:3px solid #7b57c2;margin:.5rem 0;padding-left:.75rem}
.transcript .end{color:#555;border-top:1px dashed #bbb;margin:.75rem 0;padding-top:.25rem;font-size:.85em}
.transcript .failure{color:#8a0000;font-weight:bold}.transcript .tool{margin:.4rem 0}
`

/** The shell of a runs page: the console's shell with Runs current and the runs views' styles. */
export function shell(ctx: { base: string; nonce: string }, title: string, body: string) {
  return renderShell({ ...ctx, title, current: 'runs', main: body, styles: RUNS_CSS })
}

const when = (millis: number) =>
  DateTime.fromMillis(millis, { zone: 'utc' }).toFormat('yyyy-LL-dd HH:mm:ss')

/** A run's link in the admin (`<base>/admin/runs/<runId>`). */
export const runHref = (base: string, runId: string) =>
  `${base}/admin/runs/${encodeURIComponent(runId)}`

function filters(ctx: RunsPageContext) {
  const q = ctx.query
  const option = (value: string, label: string, current?: string) =>
    `<option value="${e(value)}"${current === value ? ' selected' : ''}>${e(label)}</option>`
  return `<form class="filters" method="get" action="${e(`${ctx.base}/admin/runs`)}" role="search" aria-label="Filter runs">
<label for="f-status">Status<select id="f-status" name="status">${option('', 'any')}${RUN_STATUSES.map((s) => option(s, s, q.status)).join('')}</select></label>
<label for="f-thread">Thread<input id="f-thread" name="thread" maxlength="191" value="${e(q.thread)}" dir="auto"></label>
<label for="f-age">Started<select id="f-age" name="age">${option('', 'any time')}${Object.keys(
    RUN_AGES
  )
    .map((age) => option(age, `in the last ${age}`, q.age))
    .join('')}</select></label>
<label for="f-tool">Tool<input id="f-tool" name="tool" maxlength="191" value="${e(q.tool)}" dir="auto"></label>
<button type="submit">Filter</button></form>`
}

/** The query string of the list with these filters (and an optional keyset). */
export function runsHref(base: string, query: RunsQuery) {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) if (value) params.set(key, value)
  const qs = params.toString()
  return `${base}/admin/runs${qs ? `?${qs}` : ''}`
}

/** The runs list: filters, a table of runs newest first, a link to the older ones. */
export function renderRunsPage(ctx: RunsPageContext, runs: RunSummary[]) {
  const { before, ...filtersOnly } = ctx.query
  let list: string
  if (ctx.problem) list = `<p class="problem" role="alert">${e(ctx.problem)}</p>`
  else if (runs.length === 0) list = `<p class="empty">No run matches.</p>`
  else {
    const rows = runs
      .map(
        (run) => `<tr data-run="${e(run.runId)}">
<td><a href="${e(runHref(ctx.base, run.runId))}"><code>${t(run.runId)}</code></a></td>
<td><span class="status ${e(run.status)}">${e(run.status)}</span></td>
<td><a href="${e(runsHref(ctx.base, { thread: run.threadId }))}"><code>${t(run.threadId)}</code></a></td>
<td>${e(when(run.createdAt))}</td>
<td>${e(when(run.endedAt ?? run.updatedAt))}</td></tr>`
      )
      .join('\n')
    list = `<table class="runs"><caption class="count">${runs.length} run(s) on this page, newest first</caption>
<thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Thread</th><th scope="col">Started (UTC)</th><th scope="col">Last activity (UTC)</th></tr></thead>
<tbody>${rows}</tbody></table>`
  }
  const links = [
    ...(before ? [`<a href="${e(runsHref(ctx.base, filtersOnly))}">Newest</a>`] : []),
    ...(ctx.next
      ? [
          `<a href="${e(runsHref(ctx.base, { ...filtersOnly, before: ctx.next }))}" rel="next">Older</a>`,
        ]
      : []),
  ]
  const pages =
    links.length > 0 ? `<nav class="pages" aria-label="Pages">${links.join(' ')}</nav>` : ''
  return shell(ctx, 'Agent runs', `<h1>Runs</h1>${filters(ctx)}${list}${pages}`)
}

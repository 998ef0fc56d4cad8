import { DateTime } from 'luxon'
import type { RunSummary } from '../../store/run_list.js'
import type { RunInspection } from '../../inspection/index.js'
import { renderSaid, toolKindLabel, type ConsoleFrame } from './console_frame.js'
import { e, plain, t } from './layout.js'
import type { PrincipalNames } from './names.js'
import { runsHref, shell } from './runs_page.js'
import { clock, decisionText, humanDuration, itemLabel, renderTimeline } from './timeline.js'

/**
 * One entry of a transcript: a frame as the console reads it (`consoleFrame`: the public
 * projection's, or what the person said), or a segment's end.
 */
export type TranscriptEntry = ConsoleFrame | { t: 'end' }

export interface RunPageContext {
  base: string
  nonce: string
  /** The transcript stopped at this many entries (the rest is left out, and the page says so). */
  truncated?: boolean
  /** Display names of the principals it shows (deciders). */
  names: PrincipalNames
  /** The hidden fields of the Stop form (the CSRF tokens), for a running or parked run. */
  stopFields?: Array<[name: string, value: string]>
  /** What the last stop said (`?stopped=`): `cancelled`, `stopping`, or a refusal's code. */
  stopped?: string
}

/** What the console says after a Stop, by code (never the request's own text). */
const STOP_NOTICES: Record<string, string> = {
  cancelled: 'The run was stopped.',
  stopping: 'The stop is recorded: the replica that runs it has not ended it yet.',
  E_RUN_FINISHED: 'The run had ended: there was nothing to stop.',
  E_RUN_NOT_FOUND: 'No such run.',
  E_INVALID_STOP: 'That is not a way to stop a run.',
}

/** The Stop form of a running or parked run: keep what was said, or roll the turn back. */
function stopForm(ctx: RunPageContext, run: RunSummary) {
  if (!ctx.stopFields || (run.status !== 'running' && run.status !== 'parked')) return ''
  const hidden = ctx.stopFields
    .map(([name, value]) => `<input type="hidden" name="${e(name)}" value="${e(value)}">`)
    .join('')
  return `<form method="post" action="${e(`${ctx.base}/admin/runs/${encodeURIComponent(run.runId)}/stop`)}">${hidden}
<label>What was said <select name="mode"><option value="keep">stays in the conversation</option><option value="rollback">is rolled back</option></select></label>
<button type="submit">Stop the run</button></form>`
}

const json = (value: unknown) => JSON.stringify(value, null, 2) ?? ''
const when = (millis: number | null) =>
  millis === null
    ? '-'
    : `${DateTime.fromMillis(millis, { zone: 'utc' }).toFormat('yyyy-LL-dd')} ${clock(millis)}`

/**
 * The transcript: what the person said, text as paragraphs, tool calls with their input and
 * result, questions and approvals asked, sub-agent scopes nested, failures marked, each
 * segment's end a rule. What it shows went through `consoleFrame` first (the controller): the
 * public projection, as on the doors, and the person's messages beside it.
 */
export function renderTranscript(entries: TranscriptEntry[]): string {
  const out: string[] = []
  let text = ''
  let depth = 0
  const flush = () => {
    if (text) out.push(`<p class="text" dir="auto">${t(text)}</p>`)
    text = ''
  }
  for (const entry of entries) {
    if (entry.t === 'text') {
      text += entry.v
      continue
    }
    flush()
    switch (entry.t) {
      case 'said':
        out.push(renderSaid(entry))
        break
      case 'end':
        out.push(`<p class="end">End of a segment (the run parked, finished or failed here).</p>`)
        break
      case 'error':
        out.push(
          `<p class="failure">Failed (<code>${t(entry.code)}</code>): ${t(entry.message)}</p>`
        )
        break
      case 'approval':
        out.push(
          `<div class="tool asked">Asked to approve <code>${t(entry.toolName)}</code> (call <code>${t(entry.id)}</code>, parked run <code>${t(entry.runId)}</code>, approver ${t(entry.approver ?? 'requester')})<pre>${t(json(entry.input))}</pre></div>`
        )
        break
      case 'elicitation':
        out.push(
          `<div class="tool asked">Asked ${entry.request.questions.length} question(s) (<code>${t(entry.id)}</code>)<ul>${entry.request.questions.map((q) => `<li>${t(q.prompt)}</li>`).join('')}</ul></div>`
        )
        break
      case 'component':
        out.push(
          `<div class="tool">Component <code>${t(entry.name)}</code><pre>${t(json(entry.data))}</pre></div>`
        )
        break
      case 'event': {
        const event = entry.event
        switch (event.kind) {
          case 'subagent-start':
            depth++
            out.push(
              `<section class="sub" aria-label="Sub-agent ${plain(event.name ?? 'agent')}"><p><strong>Sub-agent ${t(event.name ?? 'agent')}</strong> <code>${t(event.runId)}</code></p>`
            )
            break
          case 'subagent-finish':
            if (event.status === 'failed') out.push(`<p class="failure">The sub-agent failed.</p>`)
            if (depth > 0) {
              depth--
              out.push(`</section>`)
            }
            break
          case 'tool-input-available':
            out.push(
              `<div class="tool">Tool call <code>${t(event.name)}</code> (<code>${t(event.id)}</code>)${toolKindLabel(event.toolKind)}<pre>${t(json(event.input))}</pre></div>`
            )
            break
          case 'tool-output':
            out.push(
              `<div class="tool">Result of <code>${t(event.id)}</code><pre>${t(json(event.output))}</pre></div>`
            )
            break
          case 'tool-output-error':
            out.push(
              `<p class="failure">Tool call <code>${t(event.id)}</code> failed: ${t(typeof event.error === 'string' ? event.error : json(event.error))}</p>`
            )
            break
          case 'tool-output-denied':
            out.push(
              `<p class="tool">Tool call <code>${t(event.id)}</code> did not run: ${t(event.message ?? '')}</p>`
            )
            break
          case 'approval-settled':
            out.push(
              `<p class="tool">Approval <code>${t(event.id)}</code>: ${t(event.status)}${event.decidedVia ? ` via ${t(event.decidedVia)}` : ''}${event.reason ? ` (${t(event.reason)})` : ''}</p>`
            )
            break
          case 'title':
            out.push(`<p><strong>Title:</strong> ${t(event.title)}</p>`)
            break
          case 'reasoning':
            out.push(`<p class="reasoning"><em>Reasoning:</em> ${t(event.text)}</p>`)
            break
          case 'cancelled':
            out.push(`<p class="failure">The run was cancelled.</p>`)
            break
          default:
            break
        }
        break
      }
    }
  }
  flush()
  while (depth-- > 0) out.push(`</section>`)
  return out.length > 0 ? out.join('\n') : '<p class="empty">No frames.</p>'
}

/** The parks and their decisions, as a table (the timeline's words, for every reader). */
function decisions(inspection: RunInspection, names: PrincipalNames) {
  if (inspection.parked.length === 0) return '<p class="empty">The run never parked.</p>'
  const rows = inspection.parked
    .map((item) => {
      const asked = DateTime.fromISO(item.createdAt).toMillis()
      const decided = item.decidedAt ? DateTime.fromISO(item.decidedAt).toMillis() : null
      return `<tr class="park" data-item="${e(item.itemId)}">
<td>${t(itemLabel(item))}</td><td><code>${t(item.runId)}</code></td><td>${t(item.park)}</td>
<td>${e(clock(asked))}</td><td>${t(item.status)}</td><td>${item.decidedBy ? names.html(item.decidedBy) : '-'}</td><td>${t(item.decidedVia ?? '-')}</td>
<td>${e(decided === null ? 'waiting' : clock(decided))}</td><td>${e(decided === null ? '-' : humanDuration(decided - asked))}</td><td>${t(item.reason ?? '')}</td></tr>`
    })
    .join('\n')
  const cols = ['what', 'run', 'park', 'time', 'status', 'who', 'via', 'time', 'waited', 'why']
  return `<table class="decisions"><caption>Parks and decisions, in stream order (times UTC)</caption>
<colgroup>${cols.map((c) => `<col class="${c}">`).join('')}</colgroup>
<thead><tr><th scope="col">Asked</th><th scope="col">Parked run</th><th scope="col">Park</th><th scope="col">Asked at</th><th scope="col">Status</th><th scope="col">Decided by</th><th scope="col">Via</th><th scope="col">Decided at</th><th scope="col">Waited</th><th scope="col">Reason</th></tr></thead>
<tbody>${rows}</tbody></table>`
}

/** The run view: its summary, its timeline picture, the parks and decisions, the transcript. */
export function renderRunPage(
  ctx: RunPageContext,
  run: RunSummary,
  inspection: RunInspection,
  transcript: TranscriptEntry[]
) {
  const name = (id: string) => ctx.names.of(id)
  const summary = `<dl>
<dt>Status</dt><dd><span class="status ${e(run.status)}">${e(run.status)}</span></dd>
<dt>Thread</dt><dd><a href="${e(runsHref(ctx.base, { thread: run.threadId }))}"><code>${t(run.threadId)}</code></a></dd>
<dt>Started</dt><dd>${e(when(run.createdAt))} UTC</dd>
<dt>Ended</dt><dd>${e(when(run.endedAt))}${run.endedAt === null ? '' : ' UTC'}</dd>
<dt>Frames</dt><dd>${e(inspection.rows.length)} stored rows (last seq ${e(run.lastSeq)})</dd>
<dt>Parks</dt><dd>${e(inspection.parked.length)}: ${t(inspection.parked.map((item) => decisionText(item, undefined, name)).join('; ') || 'none')}</dd>
</dl>`
  const body = `<p><a href="${e(`${ctx.base}/admin/runs`)}">All runs</a></p>
<h1>Run <code>${t(run.runId)}</code></h1>
${ctx.stopped ? `<p class="notice" role="status">${e(STOP_NOTICES[ctx.stopped] ?? STOP_NOTICES.E_RUN_NOT_FOUND)}</p>` : ''}
${summary}
${stopForm(ctx, run)}
<h2 id="timeline-heading">Timeline</h2>
<div class="figure">${renderTimeline(inspection, 'timeline', name)}</div>
<h2>Parks and decisions</h2>
${decisions(inspection, ctx.names)}
<h2>Transcript</h2>
<div class="transcript">${renderTranscript(transcript)}</div>
${ctx.truncated ? '<p class="empty">The transcript is cut here: the run has more frames (see <code>node ace agent-stream:inspect</code>).</p>' : ''}`
  return shell(ctx, `Run ${run.runId.slice(0, 60)}`, body)
}

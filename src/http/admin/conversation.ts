import type { StreamFrame } from '../../core/frames.js'
import type { ProjectionRules } from '../../core/projection.js'
import { consoleFrame, renderSaid, toolKindLabel } from './console_frame.js'
import { t } from './layout.js'

/**
 * A run's conversation as the admin console shows it: stored frames, read through the sink's
 * one read path, passed through the one public projection the doors use (so the console shows
 * nothing of the agent's a door would not send: no reasoning unless allowed, fixed sentences for
 * errors and failed tools) with what the person said beside it (`console_frame.ts`), rendered as
 * escaped, bidi-isolated HTML. Sub-agent scopes nest.
 */

/** What a conversation reads: the sink's `replay` (its one read path). */
export type ReplayFrames = (
  runId: string,
  options: { until: { seq: number } }
) => AsyncIterable<StreamFrame | { t: 'end' }>

/** The most blocks shown (the latest ones); the most characters of one text block or value. */
const MAX_BLOCKS = 300
const MAX_CHARS = 20_000

const cut = (text: string) =>
  text.length > MAX_CHARS
    ? `${text.slice(0, MAX_CHARS)} … (${text.length - MAX_CHARS} more characters)`
    : text

const json = (value: unknown) => cut(JSON.stringify(value, null, 2) ?? 'undefined')

/**
 * The conversation of stream `streamRunId` up to and including `untilSeq` (the frame that
 * parked), as HTML: the last {@link MAX_BLOCKS} blocks, text joined per message.
 */
export async function renderConversation(
  replay: ReplayFrames,
  streamRunId: string,
  untilSeq: number,
  rules: ProjectionRules
): Promise<string> {
  const blocks: string[] = []
  let text = ''
  let dropped = 0
  let depth = 0
  const push = (html: string) => {
    blocks.push(html)
    if (blocks.length > MAX_BLOCKS) {
      blocks.shift()
      dropped++
    }
  }
  const flush = () => {
    if (text) push(`<p class="say">${t(cut(text))}</p>`)
    text = ''
  }
  for await (const stored of replay(streamRunId, { until: { seq: untilSeq } })) {
    if (stored.t === 'end') {
      flush()
      push('<p class="muted seg">— segment ended (parked) —</p>')
      continue
    }
    const frame = consoleFrame(stored as StreamFrame, rules)
    if (!frame) continue
    if (frame.t === 'text') {
      text += frame.v
      continue
    }
    flush()
    if (frame.t === 'said') push(renderSaid(frame, cut))
    else if (frame.t === 'error') push(`<p class="err">Error: ${t(frame.message)}</p>`)
    else if (frame.t === 'component')
      push(`<p class="muted">UI component <code>${t(frame.name)}</code></p>`)
    else if (frame.t === 'approval')
      push(
        `<p class="ask">Asked for approval of <code>${t(frame.toolName)}</code> (run <code>${t(frame.runId)}</code>)</p>`
      )
    else if (frame.t === 'elicitation')
      push(
        `<p class="ask">Asked a question set${frame.request.preamble ? `: ${t(frame.request.preamble)}` : ''}</p>`
      )
    else {
      const event = frame.event
      switch (event.kind) {
        case 'text':
          text += event.text
          break
        case 'reasoning':
          push(`<p class="muted">Reasoning: ${t(cut(event.text))}</p>`)
          break
        case 'tool-input-available':
          push(
            `<div class="call"><p>Tool call <code>${t(event.name)}</code>${toolKindLabel(event.toolKind)}</p><pre tabindex="0">${t(json(event.input))}</pre></div>`
          )
          break
        case 'tool-output':
          push(
            `<div class="result"><p>Result</p><pre tabindex="0">${t(json(event.output))}</pre></div>`
          )
          break
        case 'tool-output-error':
          push(
            `<p class="err">Tool failed: ${t(typeof event.error === 'string' ? event.error : json(event.error))}</p>`
          )
          break
        case 'tool-output-denied':
          push(`<p class="err">${t(event.message ?? 'Did not run.')}</p>`)
          break
        case 'approval-settled':
          push(
            `<p class="muted">Approval ${t(event.status)}${event.decidedVia ? ` via ${t(event.decidedVia)}` : ''}</p>`
          )
          break
        case 'title':
          push(`<p class="muted">Title: ${t(event.title)}</p>`)
          break
        case 'subagent-start':
          depth++
          push(
            `<div class="scope" role="group" aria-label="Sub-agent"><p class="muted">Sub-agent <code>${t(event.name ?? event.runId)}</code> started</p>`
          )
          break
        case 'subagent-finish':
          if (depth > 0) {
            depth--
            push(`<p class="muted">Sub-agent ${t(event.status ?? 'success')}</p></div>`)
          }
          break
        case 'cancelled':
          push('<p class="err">Cancelled</p>')
          break
        default:
          break
      }
    }
  }
  flush()
  // Scopes still open at the park (a child that asked) are closed for the markup.
  const open = '</div>'.repeat(depth)
  // Dropping the oldest blocks could drop a scope's opening: count what remains balanced.
  const html = blocks.join('\n') + open
  const balanced = balance(html)
  const note = dropped > 0 ? `<p class="muted">${dropped} earlier blocks not shown.</p>` : ''
  return blocks.length === 0 && dropped === 0
    ? '<p class="muted">Nothing was said before this ask.</p>'
    : `${note}${balanced}`
}

/** Drop closing `</div>` tags of scopes whose opening fell off the front. */
function balance(html: string) {
  let open = 0
  return html.replace(/<div\b[^>]*>|<\/div>/g, (tag) => {
    if (tag.startsWith('</')) {
      if (open === 0) return ''
      open--
      return tag
    }
    open++
    return tag
  })
}

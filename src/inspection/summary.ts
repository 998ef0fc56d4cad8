import type { StreamFrame } from '../core/frames.js'
import { shownUserMessage } from '../core/user_message.js'
import { APPENDED_END, type StoredRow } from '../store/rows.js'

/** Longest frame summary, in characters. */
const SUMMARY_WIDTH = 80

function truncate(text: string, width = SUMMARY_WIDTH) {
  const line = text.replace(/\s+/g, ' ')
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`
}

const quoted = (text: string) => JSON.stringify(text)

/** One line about an event frame: its kind, then its id (or run id) and the telling field. */
function eventSummary(event: Extract<StreamFrame, { t: 'event' }>['event']): string {
  const parts: string[] = [event.kind]
  if ('id' in event) parts.push(event.id)
  if ('runId' in event) parts.push(event.runId)
  switch (event.kind) {
    case 'text':
    case 'reasoning':
      parts.push(quoted(event.text))
      break
    case 'title':
      parts.push(quoted(event.title))
      break
    case 'tool-input-start':
    case 'tool-input-available':
      parts.push(`${event.name} (${event.toolKind})`)
      break
    case 'approval-settled':
      parts.push(event.status)
      if (event.decidedBy) parts.push(`by ${event.decidedBy}`)
      if (event.decidedVia) parts.push(`via ${event.decidedVia}`)
      break
    case 'tool-output-denied':
      if (event.reason) parts.push(quoted(event.reason))
      break
    case 'ui':
      parts.push(event.component)
      break
    case 'subagent-start':
      if (event.name) parts.push(event.name)
      break
    case 'subagent-finish':
      if (event.status) parts.push(event.status)
      break
    case 'step-finish':
      if (event.model) parts.push(event.model)
      break
    case 'user-message':
      // What the person said: its text, each file by name and media type (never its URL).
      for (const part of shownUserMessage({ t: 'event', event })?.parts ?? []) {
        parts.push(
          part.type === 'text'
            ? quoted(part.text)
            : `[file ${part.filename === null ? '' : `${quoted(part.filename)} `}${part.mediaType}]`
        )
      }
      break
  }
  return parts.join(' ')
}

/** One line about a stored row (at most {@link SUMMARY_WIDTH} characters). */
export function summarizeRow(row: StoredRow): string {
  let summary: string
  if (row.kind === 'text') summary = quoted(row.body)
  else if (row.kind === 'data') summary = `data (${row.body.length} characters)`
  else if (row.kind === 'end')
    summary = row.body === APPENDED_END ? 'end (after appended frames)' : 'end of segment'
  else {
    let frame: StreamFrame
    try {
      frame = JSON.parse(row.body)
    } catch {
      return truncate(row.body)
    }
    switch (frame.t) {
      case 'component':
        summary = [frame.name, frame.id, frame.version === undefined ? '' : `v${frame.version}`]
          .filter(Boolean)
          .join(' ')
        break
      case 'event':
        summary = eventSummary(frame.event)
        break
      case 'error':
        summary = `${frame.code}: ${frame.message}`
        break
      case 'elicitation':
        summary = `${frame.request.questions.length} question(s) ${frame.id}`
        break
      case 'approval':
        summary = `${frame.toolName} ${frame.id} (approver: ${frame.approver ?? 'requester'})`
        break
      default:
        summary = row.body
    }
  }
  if (row.superseded) return `${truncate(summary, SUMMARY_WIDTH - 13)} [superseded]`
  return truncate(summary)
}

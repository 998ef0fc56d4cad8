import { BaseCommand, args, flags } from '@adonisjs/core/ace'
import type { CommandOptions } from '@adonisjs/core/types/ace'
import { DateTime } from 'luxon'
import type { StreamFrame } from '../src/core/frames.js'
import type { PendingItem } from '../src/parking/types.js'
import { APPENDED_END, type StoredRow } from '../src/store/stream_store.js'
import type { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'

type Head = NonNullable<Awaited<ReturnType<LucidTokenStreamSink['head']>>>

/** Longest frame summary, in characters. */
const SUMMARY_WIDTH = 80
const iso = (ms: number | null) => (ms === null ? null : DateTime.fromMillis(ms).toUTC().toISO())

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
  }
  return parts.join(' ')
}

/** One line about a stored row (at most {@link SUMMARY_WIDTH} characters). */
export function summarizeRow(row: StoredRow): string {
  let summary: string
  if (row.kind === 'text') summary = quoted(row.body)
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

/**
 * `node ace agent-stream:inspect <runId>`: a stream's head, its frames and its parked items
 * (pending and decided), as tables or, with `--json`, as one JSON object. An unknown run id
 * logs an error and exits with code 1.
 */
export default class AgentStreamInspect extends BaseCommand {
  static commandName = 'agent-stream:inspect'
  static description = "Show an agent stream's status, frames and parked items"
  static options: CommandOptions = { startApp: true }

  @args.string({ description: 'Run id of the stream' })
  declare runId: string

  @flags.boolean({ description: 'Print one JSON object instead of tables' })
  declare json: boolean

  async run() {
    const agentStream = await this.app.container.make('agentStream')
    const sink = agentStream.sink
    const head = await sink.head(this.runId)
    if (!head) {
      this.logger.error(`Unknown stream "${this.runId}"`)
      this.exitCode = 1
      return
    }
    const rows: StoredRow[] = []
    for await (const page of sink.storedRows(this.runId, { toSeq: head.lastSeq })) {
      rows.push(...page)
    }
    const parked: PendingItem[] = []
    for (const status of ['pending', 'decided'] as const) {
      for (let page = 1; ; page++) {
        const items = await agentStream.parking.list({
          streamRunId: this.runId,
          status,
          page,
          perPage: 100,
        })
        parked.push(...items)
        if (items.length < 100) break
      }
    }

    if (this.json) this.#printJson(head, rows, parked)
    else this.#printTables(head, rows, parked)
  }

  #lease(head: Head) {
    if (head.leaseExpiresAt === null) return { expiresAt: null, lapsed: false }
    return { expiresAt: iso(head.leaseExpiresAt), lapsed: head.leaseExpiresAt < Date.now() }
  }

  #printJson(head: Head, rows: StoredRow[], parked: PendingItem[]) {
    const lease = this.#lease(head)
    this.logger.log(
      JSON.stringify(
        {
          stream: {
            runId: head.runId,
            status: head.status,
            lastSeq: head.lastSeq,
            rev: head.rev,
            createdAt: iso(head.createdAt),
            updatedAt: iso(head.updatedAt),
            endedAt: iso(head.endedAt),
            leaseExpiresAt: lease.expiresAt,
            leaseLapsed: lease.lapsed,
          },
          frames: rows.map((row) => ({
            seq: row.seq,
            kind: row.kind,
            summary: summarizeRow(row),
            superseded: row.superseded,
          })),
          parked: parked.map((item) => ({
            kind: item.kind,
            runId: item.runId,
            itemId: item.itemId,
            park: item.park,
            streamSeq: item.streamSeq,
            status: item.status,
            approver: item.approver,
            toolName: item.toolName ?? null,
            decidedBy: item.decidedBy ?? null,
            decidedVia: item.decidedVia ?? null,
            reason: item.reason ?? null,
            createdAt: item.createdAt,
            expiresAt: item.expiresAt,
          })),
        },
        null,
        2
      )
    )
  }

  #printTables(head: Head, rows: StoredRow[], parked: PendingItem[]) {
    const lease = this.#lease(head)
    const leaseText =
      lease.expiresAt === null
        ? '-'
        : lease.lapsed
          ? `lapsed at ${lease.expiresAt}`
          : `held until ${lease.expiresAt}`

    this.logger.log(this.colors.bold(`Stream ${head.runId}`))
    this.ui
      .table()
      .head(['Field', 'Value'])
      .row(['status', head.status])
      .row(['last seq', String(head.lastSeq)])
      .row(['created', iso(head.createdAt)!])
      .row(['updated', iso(head.updatedAt)!])
      .row(['ended', iso(head.endedAt) ?? '-'])
      .row(['lease', leaseText])
      .render()

    this.logger.log(this.colors.bold(`Frames (${rows.length})`))
    if (rows.length > 0) {
      const frames = this.ui.table().head(['Seq', 'Kind', 'Summary'])
      for (const row of rows) frames.row([String(row.seq), row.kind, summarizeRow(row)])
      frames.render()
    }

    this.logger.log(this.colors.bold(`Parked items (${parked.length})`))
    if (parked.length > 0) {
      const items = this.ui
        .table()
        .head(['Kind', 'Parked run', 'Item', 'Status', 'Approver', 'Decided by / via', 'Expires'])
      for (const item of parked) {
        items.row([
          item.toolName ? `${item.kind} ${item.toolName}` : item.kind,
          item.runId,
          item.itemId,
          item.status,
          item.approver,
          item.status === 'pending' ? '-' : `${item.decidedBy ?? '-'} / ${item.decidedVia ?? '-'}`,
          item.expiresAt ?? '-',
        ])
      }
      items.render()
    }
  }
}

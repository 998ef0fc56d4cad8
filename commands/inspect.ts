import { BaseCommand, args, flags } from '@adonisjs/core/ace'
import type { CommandOptions } from '@adonisjs/core/types/ace'
import { DateTime } from 'luxon'
import type { PendingItem } from '../src/parking/types.js'
import type { StoredRow } from '../src/store/stream_store.js'
import { gatherStory, summarizeRow, type StoryHead as Head } from '../src/story/index.js'

export { summarizeRow }

const iso = (ms: number | null) => (ms === null ? null : DateTime.fromMillis(ms).toUTC().toISO())

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
    // The same story the admin run view draws (`src/story/`).
    const story = await gatherStory(agentStream.sink, agentStream.parking, this.runId)
    if (!story) {
      this.logger.error(`Unknown stream "${this.runId}"`)
      this.exitCode = 1
      return
    }
    const { head, rows, parked } = story
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

import { BaseCommand, args, flags } from '@adonisjs/core/ace'
import type { CommandOptions } from '@adonisjs/core/types/ace'
import vine from '@vinejs/vine'
import { DateTime } from 'luxon'
import { RUN_ID } from '../src/core/frames.js'
import { describeIssues, issuesOf } from '../src/errors.js'
import type { ParkedItem } from '../src/parking/types.js'
import { RUN_STATUSES, RunList, type RunSummary } from '../src/store/run_list.js'
import type { StoredRow } from '../src/store/rows.js'
import type { StoredPurgeRun } from '../src/store/purge_runs.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import {
  inspectPurge,
  inspectRun,
  runDeliveries,
  summarizeRow,
  type InspectedDelivery,
  type InspectedHead as Head,
} from '../src/inspection/index.js'

export { summarizeRow }

const iso = (ms: number | null) => (ms === null ? null : DateTime.fromMillis(ms).toUTC().toISO())

/** Runs a list shows when `--limit` is not given, and the most it may ask for. */
const LIST_LIMIT = { default: 20, max: 1000 }

/** The flags of a list (a thread's, a chat's, or the recent runs), checked before any read. */
const listFlags = vine.compile(
  vine.object({
    thread: vine.string().regex(RUN_ID).optional(),
    chat: vine.string().regex(RUN_ID).optional(),
    status: vine.enum(RUN_STATUSES).optional(),
    limit: vine.number().withoutDecimals().range([1, LIST_LIMIT.max]).optional(),
  })
)

/**
 * `node ace agent-stream:inspect <runId>`: a stream's head, its frames and its parked items
 * (pending and decided), as tables or, with `--json`, as one JSON object. An unknown run id
 * logs an error and exits with code 1.
 *
 * Without a run id it lists runs, newest first, as the admin's runs page does (the same status
 * rule): the recent ones, a thread's (`--thread`, an AG-UI `threadId`) or a chat's (`--chat`,
 * a `useChat` id), with `--status` and `--limit`. A thread or chat with no run exits with 1.
 */
export default class AgentStreamInspect extends BaseCommand {
  static commandName = 'agent-stream:inspect'
  static description = "Show an agent stream's status, frames and parked items, or list runs"
  static options: CommandOptions = { startApp: true }

  @args.string({ description: 'Run id of the stream (none: list runs)', required: false })
  declare runId?: string

  @flags.string({ description: "List a thread's runs (an AG-UI threadId)" })
  declare thread?: string

  @flags.string({ description: "List a chat's runs (a useChat id)" })
  declare chat?: string

  @flags.string({ description: `Only runs of this status (${RUN_STATUSES.join(', ')})` })
  declare status?: string

  @flags.number({ description: `Most runs listed (default ${LIST_LIMIT.default})` })
  declare limit?: number

  @flags.boolean({ description: 'Print one JSON object instead of tables' })
  declare json: boolean

  @flags.boolean({
    description:
      'Show the purge: streams due now, the schedule, its last run and the last manual purge',
  })
  declare purge: boolean

  async run() {
    if (this.purge) return this.#purge()
    const listing = [this.thread, this.chat, this.status, this.limit].some((f) => f !== undefined)
    if (this.runId === undefined || listing) return this.#list()
    const agentStream = await this.app.container.make('agentStream')
    // The same inspection the admin run view draws (`src/inspection/`).
    const inspection = await inspectRun(agentStream.sink, agentStream.parking, this.runId)
    if (!inspection) {
      this.logger.error(`Unknown stream "${this.runId}"`)
      this.exitCode = 1
      return
    }
    const { head, rows, parked } = inspection
    const deliveries = await runDeliveries(agentStream.sink, this.runId)
    if (this.json) this.#printJson(head, rows, parked, deliveries)
    else {
      this.#printTables(head, rows, parked)
      this.#printDeliveries(deliveries)
    }
  }

  /**
   * `--purge`: what is due now, the schedule, its last run and the last purge run by hand as
   * stored (any process sees them), and, where it runs, this process's schedule (running, total
   * purged, next due).
   */
  async #purge() {
    const agentStream = await this.app.container.make('agentStream')
    const schedule = agentStream.purgeSchedule
    const purge = await inspectPurge(agentStream.sink, {
      options: agentStream.config.purge,
      status: schedule?.started ? schedule.status() : null,
    })
    const { status, lastRun } = purge.schedule
    const { lastManualRun } = purge
    const dated = (run: StoredPurgeRun | null) =>
      run && { ...run, startedAt: iso(run.startedAt), endedAt: iso(run.endedAt) }
    const shown = {
      ttlMs: purge.ttlMs,
      due: purge.due,
      oldestDueEndedAt: iso(purge.oldestDueEndedAt),
      lastManualRun: dated(lastManualRun),
      schedule: {
        ...purge.schedule,
        lastRun: dated(lastRun),
        status: status && {
          ...status,
          lastRunAt: iso(status.lastRunAt),
          nextDueAt: iso(status.nextDueAt),
        },
      },
    }
    if (this.json) return this.logger.log(JSON.stringify({ purge: shown }, null, 2))
    const every = purge.schedule.everyMs
    const table = this.ui.table().head(['Purge', ''])
    table.row(['TTL', `${purge.ttlMs} ms`])
    table.row(['Due now', `${purge.due} stream(s)`])
    table.row(['Oldest due ended', shown.oldestDueEndedAt ?? '-'])
    table.row(['Schedule', every === null ? 'none (config purge.every)' : `every ${every} ms`])
    table.row(['Batch size', String(purge.schedule.batchSize ?? 'default')])
    // The last run any process stored (the schedule runs in the web processes), then the last
    // purge run by hand.
    const runRows = (label: string, run: StoredPurgeRun | null, at: string | null | undefined) => {
      table.row([`${label} run`, at ?? '-'])
      if (!run) return
      const { startedAt, endedAt } = run
      table.row([`${label} purged`, String(run.purged ?? '-')])
      table.row([
        `${label} duration`,
        endedAt === null ? '- (running, or its process stopped)' : `${endedAt - startedAt} ms`,
      ])
      table.row([`${label} error`, run.error ?? '-'])
    }
    runRows('Last', lastRun, shown.schedule.lastRun?.startedAt)
    runRows('Last manual', lastManualRun, shown.lastManualRun?.startedAt)
    // This process's schedule, where it runs (never in this command run from a shell).
    if (status) {
      table.row(['Running', String(status.running)])
      table.row(['Purged since start', String(status.totalPurged)])
      table.row(['Next due', shown.schedule.status?.nextDueAt ?? '-'])
    }
    table.render()
  }

  /** Fail with one line, exit code 1. */
  #fail(message: string) {
    this.logger.error(message)
    this.exitCode = 1
  }

  async #list() {
    if (this.runId !== undefined)
      return this.#fail('Give a run id, or list with --thread, --chat, --status or --limit')
    if (this.thread !== undefined && this.chat !== undefined)
      return this.#fail('Give --thread or --chat, not both')
    let filter
    try {
      filter = await listFlags.validate({
        thread: this.thread,
        chat: this.chat,
        status: this.status,
        limit: this.limit,
      })
    } catch (error) {
      const issues = issuesOf(error)
      if (!issues) throw error
      return this.#fail(describeIssues('Invalid flags', issues))
    }
    const agentStream = await this.app.container.make('agentStream')
    const { sink } = agentStream
    const threadId = filter.thread ?? filter.chat
    // The useChat door keeps a chat as a thread of the same id.
    const runs = await new RunList(() => sinkInternals(sink).client, sink.tables).list({
      threadId,
      status: filter.status,
      limit: filter.limit ?? LIST_LIMIT.default,
    })
    const what = filter.chat !== undefined ? 'chat' : 'thread'
    if (threadId !== undefined && runs.length === 0 && filter.status === undefined)
      return this.#fail(`Unknown ${what} "${threadId}"`)
    if (this.json) this.#printRunsJson(runs, threadId === undefined ? {} : { [what]: threadId })
    else this.#printRunsTable(runs, threadId === undefined ? 'Runs' : `Runs of ${what} ${threadId}`)
  }

  #printRunsJson(runs: RunSummary[], lookup: Record<string, string>) {
    const shown = runs.map((run) => ({
      runId: run.runId,
      status: run.status,
      threadId: run.threadId,
      lastSeq: run.lastSeq,
      createdAt: iso(run.createdAt),
      updatedAt: iso(run.updatedAt),
      endedAt: iso(run.endedAt),
    }))
    this.logger.log(JSON.stringify({ ...lookup, runs: shown }, null, 2))
  }

  #printRunsTable(runs: RunSummary[], title: string) {
    this.logger.log(this.colors.bold(`${title} (${runs.length})`))
    if (runs.length === 0) return
    const table = this.ui.table().head(['Run', 'Status', 'Thread', 'Last seq', 'Created', 'Ended'])
    for (const run of runs) {
      table.row([
        run.runId,
        run.status,
        run.threadId,
        String(run.lastSeq),
        iso(run.createdAt)!,
        iso(run.endedAt) ?? '-',
      ])
    }
    table.render()
  }

  #lease(head: Head) {
    if (head.leaseExpiresAt === null) return { expiresAt: null, lapsed: false }
    return { expiresAt: iso(head.leaseExpiresAt), lapsed: head.leaseExpiresAt < Date.now() }
  }

  /** The run's webhook deliveries (the outbox), when it has any. */
  #printDeliveries(deliveries: InspectedDelivery[]) {
    if (deliveries.length === 0) return
    this.logger.log(this.colors.bold(`Webhook deliveries (${deliveries.length})`))
    const table = this.ui
      .table()
      .head(['Event', 'Endpoint', 'Status', 'Attempts', 'Last error', 'webhook-id'])
    for (const d of deliveries) {
      table.row([d.event, d.endpointHost, d.status, String(d.attempts), d.lastError ?? '-', d.id])
    }
    table.render()
  }

  #printJson(
    head: Head,
    rows: StoredRow[],
    parked: ParkedItem[],
    deliveries: InspectedDelivery[] = []
  ) {
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
          webhookDeliveries: deliveries.map((d) => ({
            ...d,
            createdAt: iso(d.createdAt),
            nextAttemptAt: iso(d.nextAttemptAt),
            deliveredAt: iso(d.deliveredAt),
          })),
        },
        null,
        2
      )
    )
  }

  #printTables(head: Head, rows: StoredRow[], parked: ParkedItem[]) {
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

import { BaseCommand, flags } from '@adonisjs/core/ace'
import type { CommandOptions } from '@adonisjs/core/types/ace'
import string from '@adonisjs/core/helpers/string'

/**
 * `node ace agent-stream:purge`: delete streams that ended longer ago than the configured TTL,
 * with everything they owned (frames, parks, approvals, question sets, door runs, checkpoints),
 * a batch of streams per transaction. Open streams, and parked runs' streams, are never touched.
 * Safe to run from cron on any replica. Its start and end (streams purged, or its error) are
 * stored as the last manual purge, which `agent-stream:inspect --purge` shows; `--dry-run`
 * stores nothing.
 */
export default class AgentStreamPurge extends BaseCommand {
  static commandName = 'agent-stream:purge'
  static description = 'Delete agent streams that ended longer ago than the TTL'
  static options: CommandOptions = { startApp: true }

  @flags.boolean({ description: 'Count what would be deleted, delete nothing' })
  declare dryRun: boolean

  @flags.string({ description: 'Override the TTL, e.g. "7d", "12h" or milliseconds' })
  declare olderThan?: string

  @flags.number({ description: 'Streams removed per transaction (default 100)' })
  declare batchSize?: number

  async run() {
    if (
      this.batchSize !== undefined &&
      (!Number.isInteger(this.batchSize) || this.batchSize < 1 || this.batchSize > 10_000)
    ) {
      this.logger.error('--batch-size must be a whole number from 1 to 10000')
      this.exitCode = 1
      return
    }
    let olderThanMs: number | undefined
    if (this.olderThan !== undefined) {
      try {
        // A bare number is milliseconds (the helper refuses "0").
        olderThanMs = /^[0-9]+$/.test(this.olderThan)
          ? Number(this.olderThan)
          : string.milliseconds.parse(this.olderThan)
      } catch {
        olderThanMs = Number.NaN
      }
      if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
        this.logger.error('--older-than must be a duration such as "7d", "12h" or milliseconds')
        this.exitCode = 1
        return
      }
    }
    const agentStream = await this.app.container.make('agentStream')
    const count = await agentStream.purge({
      olderThanMs,
      dryRun: this.dryRun,
      batchSize: this.batchSize,
    })
    if (this.dryRun) this.logger.info(`${count} ended stream(s) would be deleted`)
    else this.logger.success(`Deleted ${count} ended stream(s)`)
  }
}

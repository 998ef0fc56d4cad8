import { BaseCommand, flags } from '@adonisjs/core/ace'
import type { CommandOptions } from '@adonisjs/core/types/ace'
import string from '@adonisjs/core/helpers/string'

/**
 * `node ace agent-stream:purge`: delete streams that ended longer ago than the configured TTL.
 * Open streams are never touched. Safe to run from cron on any replica.
 */
export default class AgentStreamPurge extends BaseCommand {
  static commandName = 'agent-stream:purge'
  static description = 'Delete agent streams that ended longer ago than the TTL'
  static options: CommandOptions = { startApp: true }

  @flags.boolean({ description: 'Count what would be deleted, delete nothing' })
  declare dryRun: boolean

  @flags.string({ description: 'Override the TTL, e.g. "7d", "12h" or milliseconds' })
  declare olderThan?: string

  async run() {
    let olderThanMs: number | undefined
    if (this.olderThan !== undefined) {
      try {
        olderThanMs = string.milliseconds.parse(this.olderThan)
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
    const count = await agentStream.purge({ olderThanMs, dryRun: this.dryRun })
    if (this.dryRun) this.logger.info(`${count} ended stream(s) would be deleted`)
    else this.logger.success(`Deleted ${count} ended stream(s)`)
  }
}

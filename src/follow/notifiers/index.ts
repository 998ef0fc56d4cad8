import { DEFAULTS } from '../../defaults.js'
import type { NotifierContext, NotifierFactory, NotifierSetup } from './notifier.js'
import { PgNotifier } from './pg.js'
import { PollNotifier } from './poll.js'

export type * from './notifier.js'
export { PgNotifier } from './pg.js'
export { PollNotifier } from './poll.js'

/** Options of `notifiers.pg()`. Durations in milliseconds. */
export interface PgNotifierFactoryOptions {
  /** NOTIFY channel (letters, digits, `_`). Default the sink's `notifyChannel`, else `agent_stream`. */
  channel?: string
  /** The safety-net poll beside NOTIFY. Default the sink's `pollIntervalMs`, else 1000. */
  pollIntervalMs?: number
  /** LISTEN reconnect backoff, doubling from `min` to `max`. Default 100 to 5000. */
  reconnect?: { min: number; max: number }
}

/** Options of `notifiers.poll()`. */
export interface PollNotifierFactoryOptions {
  /** Poll of followed streams' heads. Default the sink's `pollIntervalMs`, else 100. */
  pollIntervalMs?: number
}

/**
 * Cross-replica wake-ups, chosen in config like `@adonisjs/limiter`'s stores:
 * `defineConfig({ notifier: notifiers.pg() })`.
 */
export const notifiers = {
  /**
   * PostgreSQL LISTEN/NOTIFY on one dedicated connection per replica (writers NOTIFY in their
   * transaction), with the heads poll as a slow safety net. A reconnected listener polls once.
   *
   * @throws Error when created for a connection that is not PostgreSQL
   */
  pg(options: PgNotifierFactoryOptions = {}): NotifierFactory {
    return {
      name: 'pg',
      create(context: NotifierContext): NotifierSetup {
        if (!context.postgres) {
          throw new Error('notifier "notify" needs a PostgreSQL connection; use "auto" or "poll"')
        }
        const channel = options.channel ?? context.notifyChannel ?? DEFAULTS.notifyChannel
        const pollIntervalMs =
          options.pollIntervalMs ?? context.pollIntervalMs ?? DEFAULTS.pollBesideNotifyMs
        const listen = new PgNotifier({
          channel,
          reconnect: options.reconnect,
          onError: context.onError,
          connect: async () => {
            const { default: pg } = await import('pg')
            const connection = context.connection as string | Record<string, unknown>
            // Named, so an operator (or a test) can tell the listener from pooled connections.
            const applicationName = `agent-stream-listen-${process.pid}`
            return new pg.Client(
              typeof connection === 'string'
                ? { connectionString: connection, application_name: applicationName }
                : ({ ...connection, application_name: applicationName } as any)
            )
          },
        })
        return {
          notifiers: [listen, new PollNotifier(pollIntervalMs)],
          notifyChannel: channel,
          pollIntervalMs,
        }
      },
    }
  },

  /** Polling of followed streams' heads only: any database. */
  poll(options: PollNotifierFactoryOptions = {}): NotifierFactory {
    return {
      name: 'poll',
      create(context: NotifierContext): NotifierSetup {
        const pollIntervalMs =
          options.pollIntervalMs ?? context.pollIntervalMs ?? DEFAULTS.pollIntervalMs
        return {
          notifiers: [new PollNotifier(pollIntervalMs)],
          notifyChannel: null,
          pollIntervalMs,
        }
      },
    }
  },
}

/** The notifier choice a sink accepts: a factory, or one of the historical names. */
export type NotifierChoice = 'auto' | 'notify' | 'poll' | NotifierFactory

/**
 * Turn a choice into a factory: `'auto'` = `pg` on PostgreSQL and `poll` elsewhere, `'notify'` =
 * `pg` (PostgreSQL only), `'poll'` = `poll`.
 */
export function notifierFactory(choice: NotifierChoice, postgres: boolean): NotifierFactory {
  if (typeof choice === 'object') return choice
  if (choice === 'poll') return notifiers.poll()
  if (choice === 'notify' || postgres) return notifiers.pg()
  return notifiers.poll()
}

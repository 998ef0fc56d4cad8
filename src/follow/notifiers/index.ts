import { DEFAULTS } from '../../defaults.js'
import type { NotifierContext, NotifierFactory, NotifierSetup } from './notifier.js'
import { PgNotifier } from './pg.js'
import { PollNotifier } from './poll.js'
import { RedisNotifier, REDIS_CHANNEL } from './redis.js'
import { RedisLink, RedisPublisher, type RedisClient } from './redis_client.js'
import { RedisOutage } from './redis_outage.js'

export type * from './notifier.js'
export { PgNotifier } from './pg.js'
export { PollNotifier } from './poll.js'
export { RedisNotifier } from './redis.js'
export type { RedisClient, RedisSubscriber } from './redis_client.js'

/** Options of `notifiers.pg()`. Durations in milliseconds. */
export interface PgNotifierFactoryOptions {
  /** NOTIFY channel (letters, digits, `_`). Default the sink's `notifyChannel`, else `agent_stream`. */
  channel?: string
  /** The safety-net poll beside NOTIFY. Default the sink's `pollIntervalMs`, else 1000. */
  pollIntervalMs?: number
  /** LISTEN reconnect backoff, doubling from `min` to `max`. Default 100 to 5000. */
  reconnect?: { min: number; max: number }
  /**
   * The LISTEN connection's own settings (a connection string, or `pg.Client` config), when the
   * sink's connection cannot hold LISTEN: behind PgBouncer in transaction mode, a direct or
   * session-mode connection for the notifier. Default: the sink's connection's.
   */
  connection?: string | Record<string, unknown>
  /**
   * The check that LISTEN hears NOTIFY (a notification of its own, at once and every `everyMs`;
   * warned about once when one does not come back within `timeoutMs`), or `false`. Default 5000
   * ms, every 300000 ms.
   */
  probe?: { timeoutMs: number; everyMs: number } | false
}

/** Options of `notifiers.redis()`. Durations in milliseconds. */
export interface RedisNotifierFactoryOptions {
  /**
   * Name of an `@adonisjs/redis` connection (`config/redis.ts`), resolved through the app's
   * container. Default: its default connection (`main`). Ignored when `client` is given.
   */
  connection?: string
  /**
   * An ioredis client (`new Redis(...)`), for use outside AdonisJS or to pick one yourself: it
   * publishes, and its `duplicate()` is the dedicated subscriber connection (closed by the
   * notifier; the client itself stays yours).
   */
  client?: RedisClient
  /** Pub/sub channel (1 to 128 of `A-Za-z0-9_:.-`). Default the sink's `notifyChannel`, else `agent_stream`. */
  channel?: string
  /** The safety-net poll beside Redis. Default the sink's `pollIntervalMs`, else 1000. */
  pollIntervalMs?: number
  /** Subscriber reconnect backoff, doubling from `min` to `max`. Default 100 to 5000. */
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
          probe: options.probe,
          onError: context.onError,
          connect: async () => {
            const { default: pg } = await import('pg')
            const connection =
              options.connection ?? (context.connection as string | Record<string, unknown>)
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

  /**
   * Redis pub/sub, for any database (MySQL/MariaDB and SQLite fleets; PostgreSQL behind a pooler
   * that drops LISTEN): every commit publishes `<runId> <rev>` (ids only) once it succeeded; each
   * replica subscribes on one dedicated connection, with the heads poll as a slow safety net. A
   * reconnected subscriber polls once. `@adonisjs/redis` and `ioredis` are optional peers,
   * imported only when this notifier resolves a `connection` (never with `client`).
   *
   * @throws Error for a channel outside the grammar; from `prepare()` (the AdonisJS config
   *   provider calls it) when `@adonisjs/redis` is not installed, its provider is not registered
   *   or the connection is unknown (without `prepare`, that is told to `onError` and polling
   *   stands in)
   */
  redis(options: RedisNotifierFactoryOptions = {}): NotifierFactory {
    if (options.channel !== undefined && !REDIS_CHANNEL.test(options.channel)) {
      throw new Error('Invalid Redis channel: use 1 to 128 letters, digits or "_:.-"')
    }
    const link = new RedisLink({ client: options.client, connection: options.connection })
    return {
      name: 'redis',
      async prepare(container) {
        await link.locate(container)
      },
      create(context: NotifierContext): NotifierSetup {
        const channel = options.channel ?? context.notifyChannel ?? DEFAULTS.notifyChannel
        const pollIntervalMs =
          options.pollIntervalMs ?? context.pollIntervalMs ?? DEFAULTS.pollBesideNotifyMs
        // One warning per outage and one info at its end, whichever of the two notices.
        const outage = new RedisOutage(context.onError, context.onInfo)
        const subscribe = new RedisNotifier({
          channel,
          client: () => link.client(),
          reconnect: options.reconnect,
          onError: context.onError,
          outage,
        })
        const publisher = new RedisPublisher(link, channel, outage)
        return {
          notifiers: [subscribe, new PollNotifier(pollIntervalMs)],
          notifyChannel: null,
          pollIntervalMs,
          publish: (runId, rev) => publisher.publish(runId, rev),
          close: async () => {
            publisher.close()
            await link.close()
          },
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

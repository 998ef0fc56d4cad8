import { wakeUpPayload } from '../../store/wake_ups.js'
import type { NotifierContainer } from './notifier.js'
import { REDIS_UNREACHABLE, type RedisOutage } from './redis_outage.js'

/**
 * What the Redis notifier needs of an ioredis `Redis` client (structural: `ioredis` is an
 * optional peer, never imported here). `status` is ioredis's connection status (`ready`,
 * `connecting`, `reconnecting`, `end`, ...).
 */
export interface RedisClient {
  readonly status: string
  publish(channel: string, message: string): Promise<unknown>
  /** A new connection with the same settings and `overrides` (ioredis `Redis#duplicate`). */
  duplicate(overrides?: Record<string, unknown>): RedisSubscriber
  on?(event: 'ready', listener: () => void): unknown
  off?(event: 'ready', listener: () => void): unknown
  quit?(): Promise<unknown>
  disconnect?(): void
}

/** The dedicated subscriber connection: an ioredis `Redis` in subscriber mode. */
export interface RedisSubscriber {
  readonly status: string
  subscribe(channel: string): Promise<unknown>
  on(event: 'message', listener: (channel: string, message: string) => void): unknown
  on(event: 'ready' | 'close', listener: () => void): unknown
  on(event: 'error', listener: (error: Error) => void): unknown
  removeAllListeners(): unknown
  /** Close at once, with no reconnect. */
  disconnect(): void
}

/** Where the Redis client comes from: a ready client, or an `@adonisjs/redis` connection. */
export interface RedisSource {
  /** An ioredis client: it publishes, and its `duplicate()` subscribes. Wins over `connection`. */
  client?: RedisClient
  /** Name of an `@adonisjs/redis` connection (`config/redis.ts`). Default: its default (`main`). */
  connection?: string
}

const PEER_MISSING =
  'notifiers.redis() needs the optional peer "@adonisjs/redis" (with "ioredis"): install it ' +
  '(node ace add @adonisjs/redis), or pass `client`, an ioredis client'

/** What is used of `@adonisjs/redis`'s manager. */
interface RedisManagerLike {
  managerConfig: { connection: string; connections: Record<string, object> }
}

/** A located client: how to open it, and whether the notifier owns it (closes it at the end). */
export interface LocatedRedis {
  open: () => RedisClient
  owned: boolean
}

/**
 * Find the client a source names, without opening anything: returns how to open it (at first
 * use, so booting an app or an ace command opens no Redis connection). A `client` is used as is
 * (it stays yours). A `connection` is looked up in `@adonisjs/redis`'s manager: from
 * `container` (the app's, given by the AdonisJS config provider), else through the package's
 * service (`@adonisjs/redis/services/main`, which needs a booted AdonisJS app); the notifier
 * opens its own `RedisConnection` with that connection's config (named
 * `agent-stream-pub-<pid>`, closed with the sink), not the app's: the manager logs every failed
 * reconnect of its connections, and an outage is the notifier's to tell, once. `@adonisjs/redis`
 * is imported only here, and only then.
 *
 * @throws Error naming what is missing: the peer not installed, no AdonisJS app or Redis
 *   provider, an unknown connection, or a cluster connection (not supported)
 */
export async function locateRedisClient(
  source: RedisSource,
  container?: NotifierContainer
): Promise<LocatedRedis> {
  const client = source.client
  if (client) return { open: () => client, owned: false }
  let RedisConnection: typeof import('@adonisjs/redis').RedisConnection
  try {
    ;({ RedisConnection } = await import('@adonisjs/redis'))
  } catch (error) {
    throw new Error(PEER_MISSING, { cause: error })
  }
  let manager: RedisManagerLike | undefined
  let cause: unknown
  try {
    if (container) {
      manager = (await container.make('redis')) as RedisManagerLike
    } else {
      const service = await import('@adonisjs/redis/services/main')
      manager = service.default as unknown as RedisManagerLike
    }
  } catch (error) {
    cause = error
  }
  if (!manager) {
    throw new Error(
      'notifiers.redis() resolves its connection through @adonisjs/redis in a booted AdonisJS ' +
        'app with its provider registered; elsewhere pass `client`, an ioredis client',
      { cause }
    )
  }
  const name = source.connection ?? manager.managerConfig.connection
  const config = manager.managerConfig.connections[name]
  if (!config) {
    throw new Error(`notifiers.redis(): no Redis connection "${name}" in config/redis.ts`)
  }
  if ('clusters' in config) {
    throw new Error('notifiers.redis() needs a single Redis connection, not a cluster')
  }
  const connectionName = `agent-stream-pub-${process.pid}`
  return {
    open: () =>
      new RedisConnection(name, { ...config, connectionName } as any)
        .ioConnection as unknown as RedisClient,
    owned: true,
  }
}

/** Statuses of an ioredis connection that cannot send now: publishing would only queue. */
const DOWN = new Set(['reconnecting', 'close', 'end'])

/**
 * The client of a Redis notifier, found once (ahead by `prepare`, or at first use) and opened at
 * first use; shared by its publisher and its subscriber. One it opened itself is closed by
 * {@link close}.
 */
export class RedisLink {
  #client: RedisClient | null = null
  #owned = false
  #locating: Promise<LocatedRedis> | null = null

  constructor(readonly source: RedisSource) {
    this.#client = source.client ?? null
  }

  /** The client once opened, or `null`. */
  get current() {
    return this.#client
  }

  /** Find the client without opening it (see {@link locateRedisClient}); the same promise every time. */
  locate(container?: NotifierContainer): Promise<LocatedRedis> {
    this.#locating ??= locateRedisClient(this.source, container)
    return this.#locating
  }

  /** The client, opened on the first call. @throws what {@link locate} throws */
  async client(): Promise<RedisClient> {
    if (this.#client) return this.#client
    const { open, owned } = await this.locate()
    if (!this.#client) {
      this.#client = open()
      this.#owned = owned
    }
    return this.#client
  }

  /** Close the client if this link opened it (a `client` given stays open: it is yours). */
  async close() {
    const client = this.#client
    if (!client || !this.#owned) return
    this.#client = null
    if (client.status === 'ready') await client.quit?.().catch(() => client.disconnect?.())
    else client.disconnect?.()
  }
}

/**
 * Publishes `<runId>` or `<runId> <rev>` (ids only, never data) on a channel, once a commit
 * succeeded. Never blocks the writer: the publish is sent and not awaited. While Redis is down
 * nothing is queued (readers elsewhere catch up by the heads poll and by the poll their
 * subscriber makes on reconnect); the outage is told once, to the notifier's {@link RedisOutage},
 * and its end when a publish succeeds.
 */
export class RedisPublisher {
  /** The publishes made before the client was ready, chained in order; `null` when none waits. */
  #pending: Promise<void> | null = null
  /** The client whose `ready` this publisher listens to (a reconnect ends its side of an outage). */
  #watched: RedisClient | null = null
  #ready = () => this.outage.answered('publisher')

  constructor(
    readonly link: RedisLink,
    readonly channel: string,
    readonly outage: RedisOutage
  ) {}

  publish(runId: string, rev?: number) {
    const payload = wakeUpPayload(runId, rev)
    const client = this.link.current
    if (client && client.status === 'ready' && !this.#pending)
      return void this.#send(client, payload)
    // Until the client is ready, each publish goes once the one before it is done: ioredis sends
    // a PUBLISH made while its connection is up but not ready yet ahead of those it queued
    // while connecting, and readers elsewhere must get a stream's revs in order.
    const next = (this.#pending ?? Promise.resolve())
      .then(() => client ?? this.link.client())
      .then((resolved) => this.#send(resolved, payload))
      .catch((error) => this.#warn(error))
    this.#pending = next
    void next.finally(() => {
      if (this.#pending === next) this.#pending = null
    })
  }

  /** Stop listening to the client (the sink shuts down). */
  close() {
    this.#watched?.off?.('ready', this.#ready)
    this.#watched = null
  }

  /** Send one publish; settles once Redis answered (never rejects: a failure is warned about). */
  #send(client: RedisClient, payload: string): Promise<void> {
    if (this.#watched !== client) {
      this.close()
      this.#watched = client
      client.on?.('ready', this.#ready)
    }
    if (DOWN.has(client.status)) {
      this.#warn()
      return Promise.resolve()
    }
    return client.publish(this.channel, payload).then(
      () => this.outage.answered('publisher'),
      (error) => this.#warn(error)
    )
  }

  #warn(cause?: unknown) {
    this.outage.failed('publisher', REDIS_UNREACHABLE, cause)
  }
}

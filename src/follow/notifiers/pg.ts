import { wakeTail, type Notifier, type NotifierHandlers } from './notifier.js'
import { DEFAULTS } from '../../defaults.js'
import { parseWakeUp } from '../../store/wake_ups.js'
import { recordWakeUpHeard } from '../../telemetry/metrics/index.js'
import { ListenProbe, type ListenProbeOptions } from './listen_probe.js'

/** A `pg.Client`-shaped connection: only what LISTEN needs. */
interface ListenClient {
  connect(): Promise<unknown>
  query(sql: string): Promise<unknown>
  end(): Promise<unknown>
  on(
    event: 'notification',
    listener: (message: { channel: string; payload?: string }) => void
  ): unknown
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown
  removeAllListeners(): unknown
}

export interface PgNotifierOptions {
  /** Channel name (a PostgreSQL identifier: letters, digits and `_`). */
  channel: string
  /** Opens a new dedicated connection (not from the pool: LISTEN holds it for good). */
  connect: () => Promise<ListenClient> | ListenClient
  /** Backoff between reconnect attempts, in milliseconds: doubles from `min` up to `max`. */
  reconnect?: { min: number; max: number }
  /** Told about connection failures (the notifier keeps retrying), and a LISTEN that hears nothing. */
  onError?: (error: unknown) => void
  /**
   * The check that LISTEN hears NOTIFY ({@link ListenProbe}: a notification of its own, sent on a
   * second short-lived connection, at once and every `everyMs`); `false` for none. Default
   * `DEFAULTS.listenProbe` (5 s, every 5 min).
   */
  probe?: ListenProbeOptions | false
}

/** The warning when LISTEN hears nothing: what it means, and the fixes. */
export const LISTEN_DEAF =
  'agent-stream: the LISTEN connection hears no NOTIFY (its own test notification did not come ' +
  'back): it likely goes through a pooler in transaction mode (PgBouncer pool_mode = ' +
  "transaction), which drops LISTEN. Nothing is lost, but other replicas' writes reach readers " +
  'here only at the safety poll. Fix: give the notifier a session-mode or direct connection ' +
  '(notifiers.pg({ connection })), or use notifiers.redis()'

/**
 * Cross-replica wake-ups over PostgreSQL LISTEN/NOTIFY on one dedicated connection per replica.
 * Writers `pg_notify(channel, runId)` inside their transaction, so the notification is delivered
 * on commit and never before. A dropped connection is reopened with backoff; on every (re)connect
 * the tail polls once, since notifications sent while it was away are lost. Once listening, it
 * checks that it hears NOTIFY at all ({@link ListenProbe}), and warns once when it does not.
 */
export class PgNotifier implements Notifier {
  /** The LISTEN connection outlives the last reader a little: readers come and go. */
  readonly lingerMs = DEFAULTS.notifyLingerMs
  #client: ListenClient | null = null
  #handlers: NotifierHandlers | null = null
  #stopped = false
  #delay: number
  #retry: NodeJS.Timeout | null = null
  #probe: ListenProbe | null

  constructor(readonly options: PgNotifierOptions) {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(options.channel)) {
      throw new Error('Invalid notify channel: use 1 to 63 letters, digits or "_"')
    }
    this.#delay = options.reconnect?.min ?? 100
    const probe = options.probe ?? DEFAULTS.listenProbe
    this.#probe = probe
      ? new ListenProbe(probe, {
          send: (payload) => this.#notifyOnce(payload),
          onDeaf: () => this.options.onError?.(new Error(LISTEN_DEAF)),
        })
      : null
  }

  /** Whether the LISTEN connection is up. */
  get listening() {
    return this.#client !== null
  }

  start(handlers: NotifierHandlers) {
    this.#handlers = handlers
    this.#stopped = false
    void this.#connect()
  }

  async stop() {
    this.#stopped = true
    this.#probe?.stop()
    if (this.#retry) clearTimeout(this.#retry)
    const client = this.#client
    this.#client = null
    if (client) {
      client.removeAllListeners()
      client.on('error', () => {})
      await client.end().catch(() => {})
    }
  }

  async #connect() {
    if (this.#stopped) return
    let client: ListenClient | null = null
    try {
      client = await this.options.connect()
      client.on('notification', (message) => {
        if (message.channel !== this.options.channel) return
        if (this.#probe?.heard(message.payload)) return
        // A wake-up (`parseWakeUp`: a hint); anything else on the channel is ignored.
        const wakeUp = parseWakeUp(message.payload)
        if (wakeUp) recordWakeUpHeard('pg', ...wakeUp)
        if (wakeUp) wakeTail(this.#handlers, wakeUp)
      })
      client.on('error', (error) => this.#dropped(client!, error))
      client.on('end', () => this.#dropped(client!))
      await client.connect()
      await client.query(`LISTEN "${this.options.channel}"`)
      if (this.#stopped) {
        await client.end().catch(() => {})
        return
      }
      this.#client = client
      this.#delay = this.options.reconnect?.min ?? DEFAULTS.notifyReconnect.min
      this.#handlers?.resync()
      this.#probe?.start()
    } catch (error) {
      this.options.onError?.(error)
      if (client) {
        client.removeAllListeners()
        client.on('error', () => {})
        await client.end().catch(() => {})
      }
      this.#schedule()
    }
  }

  #dropped(client: ListenClient, error?: Error) {
    if (this.#client !== client) return
    this.#client = null
    this.#probe?.stop()
    client.removeAllListeners()
    client.on('error', () => {})
    void client.end().catch(() => {})
    if (error) this.options.onError?.(error)
    this.#schedule()
  }

  #schedule() {
    if (this.#stopped || this.#retry) return
    const delay = this.#delay
    this.#delay = Math.min(
      this.#delay * 2,
      this.options.reconnect?.max ?? DEFAULTS.notifyReconnect.max
    )
    this.#retry = setTimeout(() => {
      this.#retry = null
      void this.#connect()
    }, delay)
    this.#retry.unref()
  }

  /** NOTIFY `payload` on the channel from a connection of its own, closed right after. */
  async #notifyOnce(payload: string) {
    const sender = await this.options.connect()
    sender.on('error', () => {})
    try {
      await sender.connect()
      // (The channel is an identifier checked above; the payload is the probe's own.)
      await sender.query(`NOTIFY "${this.options.channel}", '${payload.replaceAll("'", "''")}'`)
    } finally {
      sender.removeAllListeners()
      sender.on('error', () => {})
      await sender.end().catch(() => {})
    }
  }
}

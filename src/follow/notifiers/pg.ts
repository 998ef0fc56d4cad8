import { wakeTail, type Notifier, type NotifierHandlers } from './notifier.js'
import { DEFAULTS } from '../../defaults.js'
import { parseWakeUp } from '../../store/wake_ups.js'

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
  /** Told about connection failures (the notifier keeps retrying). */
  onError?: (error: unknown) => void
}

/**
 * Cross-replica wake-ups over PostgreSQL LISTEN/NOTIFY on one dedicated connection per replica.
 * Writers `pg_notify(channel, runId)` inside their transaction, so the notification is delivered
 * on commit and never before. A dropped connection is reopened with backoff; on every (re)connect
 * the tail polls once, since notifications sent while it was away are lost.
 */
export class PgNotifier implements Notifier {
  /** The LISTEN connection outlives the last reader a little: readers come and go. */
  readonly lingerMs = DEFAULTS.notifyLingerMs
  #client: ListenClient | null = null
  #handlers: NotifierHandlers | null = null
  #stopped = false
  #delay: number
  #retry: NodeJS.Timeout | null = null

  constructor(readonly options: PgNotifierOptions) {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(options.channel)) {
      throw new Error('Invalid notify channel: use 1 to 63 letters, digits or "_"')
    }
    this.#delay = options.reconnect?.min ?? 100
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
        // A wake-up (`parseWakeUp`: a hint); anything else on the channel is ignored.
        const wakeUp = parseWakeUp(message.payload)
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
}

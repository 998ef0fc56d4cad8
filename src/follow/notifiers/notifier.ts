import type { WakeUp } from '../../store/wake_ups.js'

/** What a notifier calls on the tail reader of its replica. */
export interface NotifierHandlers {
  /**
   * A stream changed on some replica: read it if followed here. `rev` is the stream's revision
   * after the change, when known (a replica already at it skips the read). Both are hints: a
   * `rev` ahead of the stream only costs a read (the tail takes its revisions from what it
   * read), one that is not a non-negative safe integer counts as absent.
   */
  wake(runId: string, rev?: number): void
  /** Notifications may have been missed (a dropped connection came back), or it is time to poll: poll everything. */
  resync(): void
}

/**
 * Cross-replica wake-ups for the tail reader. A notification carries a run id, never data: the
 * tail reads the committed rows itself, so a notification can never publish what is not stored.
 *
 * The tail starts its notifiers with its first followed stream and stops them once it follows
 * none (after `lingerMs`, for one that holds a connection worth keeping while readers come and
 * go), and on shutdown.
 */
export interface Notifier {
  start(handlers: NotifierHandlers): void
  stop(): Promise<void>
  /** Milliseconds it stays started after the last followed stream is left. Default 0 (stops at once). */
  readonly lingerMs?: number
}

/** What a notifier factory is told about the sink it serves. */
export interface NotifierContext {
  /** Lucid client of the sink's connection (`pg`, `mysql2`, `better-sqlite3`, ...). */
  client: string
  /** Whether that connection is PostgreSQL. */
  postgres: boolean
  /** The connection's config (`connection` of the Lucid connection): for a dedicated connection. */
  connection: unknown
  /** The sink's `pollIntervalMs`, when set (a factory's own option wins over it). */
  pollIntervalMs?: number
  /** The sink's `notifyChannel`, when set (a factory's own option wins over it). */
  notifyChannel?: string
  /** Told about background failures (connection drops); the notifier keeps going. */
  onError?: (error: unknown) => void
  /** Told, in one line, that a failure warned about through `onError` is over (Redis back). */
  onInfo?: (message: string) => void
}

/** A notifier factory's product: the notifiers a tail runs, and what writers must do on commit. */
export interface NotifierSetup {
  /** Started and stopped by the tail (for example LISTEN, and the safety-net poll). */
  notifiers: Notifier[]
  /**
   * PostgreSQL channel the store NOTIFYs inside every commit (delivered on commit, never
   * before); `null` for none.
   */
  notifyChannel: string | null
  /** The interval of the heads poll among `notifiers`, in milliseconds (for `sink.options`). */
  pollIntervalMs: number
  /**
   * Called by the store once a transaction that changed a stream (a write, an open, a removal)
   * has committed, never before and never for one rolled back: a notifier that cannot notify
   * inside the transaction (Redis) publishes here. `rev` is the stream's revision after the
   * change, when known. Must neither throw nor block (the writer does not wait for it).
   */
  publish?: (runId: string, rev?: number) => void
  /**
   * Called by the sink's shutdown once its notifiers stopped: release what the setup opened
   * itself (the Redis notifier's own connection). Never rejects.
   */
  close?: () => Promise<void>
}

/** A dependency-injection container, as AdonisJS's (`app.container`): what `prepare` may use. */
export interface NotifierContainer {
  make(binding: string): Promise<unknown>
}

/**
 * How config chooses cross-replica wake-ups (`notifiers.pg()`, `notifiers.redis()`,
 * `notifiers.poll()`): notifiers that wake the tail, and a way to publish on commit (in the
 * transaction for PostgreSQL, {@link NotifierSetup.publish} after it for others). `create` runs
 * once per sink.
 *
 * @throws Error from `create` when the connection cannot serve it (`pg` on another database)
 */
export interface NotifierFactory {
  /** A short name for logs and errors (`pg`, `redis`, `poll`). */
  readonly name: string
  create(context: NotifierContext): NotifierSetup
  /**
   * Resolve what the factory loads lazily (an optional peer, a connection from the container)
   * before the first use, so a misconfiguration fails at startup rather than in the background.
   * The AdonisJS config provider calls it with the app's container; optional everywhere else.
   *
   * @throws Error naming what is missing (an optional peer not installed, a provider not
   *   registered, an unknown connection)
   */
  prepare?(container?: NotifierContainer): Promise<void>
}

/**
 * Hand a wake-up heard on a connection to the tail: whatever the tail does with it, nothing
 * thrown reaches the connection's event emitter (which would take the process down).
 */
export function wakeTail(handlers: NotifierHandlers | null, [runId, rev]: WakeUp) {
  try {
    handlers?.wake(runId, rev)
  } catch {
    // A wake-up is a hint: the heads poll covers one lost.
  }
}

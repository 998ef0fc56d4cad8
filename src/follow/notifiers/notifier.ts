/** What a notifier calls on the tail reader of its replica. */
export interface NotifierHandlers {
  /**
   * A stream changed on some replica: read it if followed here. `rev` is the stream's revision
   * after the change, when known (a replica already at it skips the read).
   */
  wake(runId: string, rev?: number): void
  /** Notifications may have been missed (a dropped connection came back): poll everything. */
  resync(): void
}

/**
 * Cross-replica wake-ups for the tail reader. A notification carries a run id, never data: the
 * tail reads the committed rows itself, so a notification can never publish what is not stored.
 */
export interface Notifier {
  start(handlers: NotifierHandlers): void
  stop(): Promise<void>
}

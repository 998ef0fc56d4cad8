/** How a tail follows: its feeds' windows, its reads, and what it does with lapsed leases. */
export interface TailOptions {
  /** Deliveries kept per followed stream for readers that keep up. */
  windowSize: number
  /** UTF-8 bytes of deliveries kept per followed stream; also the most one store read brings. */
  windowBytes: number
  /** Rows per store read. */
  pageSize: number
  /** Called for each followed stream whose writer's lease lapsed: fail it (exactly once). */
  onLapsed: (runId: string) => Promise<void>
  /**
   * A lease that lapsed while the database was unreachable or stalled says nothing of its writer
   * (it could not renew): lapsed leases are acted on only once this replica's reads have been
   * healthy (none failed, none slower than a third of this) for this long (the writer's lease
   * length: live writers renew meanwhile; see `ReadHealth`). Default 0.
   */
  lapseGraceMs?: number
  /**
   * Resolves once the database's clock was read (leases are in its time; see `ClockWatch.ready`):
   * awaited before leases are compared.
   */
  clock?: () => Promise<void>
}

/** Told of a stream this replica heard about (see `Tail.observe`). */
export type TailObserver = (runId: string, rev: number | undefined, local: boolean) => void

/** A suspension with nothing pending any more: it may be claimed and resumed. */
export interface ReadyNotice {
  /** The parked run's id (a child's own id when a child parked). */
  runId: string
  /** Which park of that run. */
  park: number
}

/**
 * Told when a suspension is ready. Resolves to whether it claimed the suspension (the run driver
 * returns what `tryResume` did); a listener that only watches may return nothing.
 */
export type ReadyListener = (notice: ReadyNotice) => boolean | void | Promise<boolean | void>

/**
 * The listeners of ready notices. Parking settles and emits; whoever resumes runs listens (the
 * run driver, wired by the composition root), so parking never depends on the runner.
 */
export class ReadyNotices {
  #listeners = new Set<ReadyListener>()

  /** Add a listener; returns the function that removes it. */
  on(listener: ReadyListener): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /**
   * Tell every listener, one after the other, awaiting each (so a decision resolves only after
   * the resume was claimed). Resolves to whether any listener claimed the suspension.
   * @throws what a listener throws (the listeners after it are not told)
   */
  async emit(notice: ReadyNotice): Promise<boolean> {
    let claimed = false
    for (const listener of [...this.#listeners]) {
      if ((await listener(notice)) === true) claimed = true
    }
    return claimed
  }
}

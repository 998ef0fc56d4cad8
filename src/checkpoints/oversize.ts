/** Streams remembered as warned about, at most (then the memory starts over). */
const REMEMBERED = 1024

/**
 * A translator state over a checkpoint byte bound is not kept; that is told (once per stream
 * key, a bounded memory of which were told) instead of dropped silently. The translators' states
 * are bounded by what is open in a run (docs/checkpoints.md): a state this large is a run with
 * that much open at once, or the AG-UI `messagesSnapshot` transcript, which is the run's history.
 */
export class OversizeWarnings {
  #told = new Set<string>()

  warn(
    onError: ((error: unknown) => void) | undefined,
    key: string,
    where: 'in memory' | 'stored',
    size: number,
    maxBytes: number
  ) {
    if (!onError || this.#told.has(key)) return
    if (this.#told.size >= REMEMBERED) this.#told.clear()
    this.#told.add(key)
    // (The stream's id leads its key: `checkpointKey`.)
    const streamRunId = key.slice(0, key.indexOf('\n'))
    onError(
      Object.assign(
        new Error(
          `agent-stream: a translator checkpoint of stream ${streamRunId} is ${size} bytes, over the ` +
            `${where} bound of ${maxBytes}: not kept ${where} (re-attach reads from an earlier one)`
        ),
        { code: 'checkpoint_oversize', streamRunId, bytes: size, maxBytes }
      )
    )
  }
}

/** Streams remembered as warned about, at most (then the memory starts over). */
const REMEMBERED = 1024

/**
 * A translator state over a checkpoint byte bound is not kept, and a stored checkpoint whose
 * stream has too many writes waiting is not stored; either is told (once per stream key and
 * kind, a bounded memory of which were told) instead of dropped silently. The translators' states
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
    this.#tell(onError, `oversize\n${key}`, (streamRunId = streamOf(key)) =>
      Object.assign(
        new Error(
          `agent-stream: a translator checkpoint of stream ${streamRunId} is ${size} bytes, over the ` +
            `${where} bound of ${maxBytes}: not kept ${where} (re-attach reads from an earlier one)`
        ),
        { code: 'checkpoint_oversize', streamRunId, bytes: size, maxBytes }
      )
    )
  }

  /**
   * A stored checkpoint skipped because `queued` checkpoints of its stream key already wait to
   * be stored (the database is slower than the checkpoints come): told once per key, as
   * an error whose `code` is `checkpoint_queue_full` (re-attach reads from an earlier one).
   */
  queueFull(
    onError: ((error: unknown) => void) | undefined,
    key: string,
    seq: number,
    queued: number
  ) {
    this.#tell(onError, `queue\n${key}`, (streamRunId = streamOf(key)) =>
      Object.assign(
        new Error(
          `agent-stream: a stored translator checkpoint of stream ${streamRunId} (after row ${seq}) ` +
            `was skipped: ${queued} of its checkpoints already wait to be stored (re-attach reads from an earlier one)`
        ),
        { code: 'checkpoint_queue_full', streamRunId, seq, queued }
      )
    )
  }

  #tell(onError: ((error: unknown) => void) | undefined, told: string, error: () => Error) {
    if (!onError || this.#told.has(told)) return
    if (this.#told.size >= REMEMBERED) this.#told.clear()
    this.#told.add(told)
    onError(error())
  }
}

/** The stream's id, which leads its key (`checkpointKey`). */
const streamOf = (key: string) => key.slice(0, key.indexOf('\n'))

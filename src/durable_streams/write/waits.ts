import type { Tail } from '../../follow/tail.js'

/** What a wait for a stream's next change needs: the replica's tail (its notifiers) and a poll. */
export interface ChangeSource {
  /** This replica's tail: local commits and other replicas' wake-ups (NOTIFY, Redis). */
  tail?: Tail
  /** The stream's revision now, or null when it is gone (the poll, the safety net). */
  rev(runId: string): Promise<number | null>
  /** How often the poll reads the revision while a reader waits. */
  pollMs: number
}

/**
 * Resolve once stream `runId` moved past revision `rev` (or went away), or `signal` aborted.
 * Woken by the sink's notifiers through the tail (held running while someone waits), and by a
 * poll of the stream's revision every `pollMs` for a wake-up that was lost.
 */
export function waitForChange(
  source: ChangeSource,
  runId: string,
  rev: number,
  signal: AbortSignal
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return resolve()
    const release = source.tail?.hold()
    let timer: NodeJS.Timeout | undefined
    let done = false
    const finish = (error?: unknown) => {
      if (done) return
      done = true
      stopObserving?.()
      release?.()
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      if (error) reject(error)
      else resolve()
    }
    const onAbort = () => finish()
    signal.addEventListener('abort', onAbort, { once: true })
    const stopObserving = source.tail?.observe((id, heard) => {
      if (id === runId && (heard === undefined || heard > rev)) finish()
    })
    const poll = () => {
      timer = setTimeout(() => {
        source.rev(runId).then((now) => {
          if (done) return
          if (now === null || now > rev) finish()
          else poll()
        }, finish)
      }, source.pollMs)
    }
    poll()
  })
}

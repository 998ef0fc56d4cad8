import type { Cursor } from '../../core/cursor.js'
import type { DurableSource } from '../source.js'

/** How a wait at the tail ended. */
export type Waited = 'more' | 'closed' | 'timeout' | 'aborted'

/**
 * Wait at `after` (the tail, as last read) until something follows it (`more`: data, or the
 * position moved), the stream closes, `timeoutMs` passes or `signal` aborts; what came is left
 * for the next read to gather.
 */
export async function waitAtTail(
  source: DurableSource,
  after: Cursor,
  timeoutMs: number,
  signal: AbortSignal
): Promise<Waited> {
  if (signal.aborted) return 'aborted'
  const stop = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    stop.abort()
  }, timeoutMs)
  const onAbort = () => stop.abort()
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    for await (const batch of source.batches(after, { live: true, signal: stop.signal })) {
      if (batch.closed)
        return (batch.messages?.length ?? 0) > 0 || (batch.bytes?.byteLength ?? 0) > 0
          ? 'more'
          : 'closed'
      return 'more'
    }
    // The iteration ended without a batch: the stream went away or the wait was stopped.
  } catch (error) {
    if (!stop.signal.aborted) throw error
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
  if (timedOut) return 'timeout'
  return signal.aborted ? 'aborted' : 'closed'
}

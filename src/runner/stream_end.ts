import { Wake } from '../core/wake.js'
import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'

/**
 * Wait, at most `waitMs`, for a stream to end (its writer wrote the outcome, or it was failed
 * or removed), through this replica's tail: the wait costs no query of its own. Resolves whether
 * it ended.
 */
export async function waitForEnd(
  sink: LucidTokenStreamSink,
  streamRunId: string,
  waitMs: number
): Promise<boolean> {
  const tail = sinkInternals(sink).tail
  const feed = await tail.follow(streamRunId)
  // Raced at every change of the stream (a `Wake`: no reaction left on it per change).
  const up = new Wake<'up'>()
  const timer = setTimeout(() => up.fire('up'), waitMs)
  try {
    for (;;) {
      if (feed.gone || feed.lost || feed.closed || feed.status !== 'open') return true
      if ((await up.race(feed.changed())) === 'up') return false
    }
  } finally {
    clearTimeout(timer)
    tail.unfollow(streamRunId)
  }
}

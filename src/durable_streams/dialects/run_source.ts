import type { Cursor } from '../../core/cursor.js'
import type { DurableSource, SourceBatch } from '../source.js'
import { finalPosition, runHas, runHead, type DialectRead, type RunCore } from './run_state.js'

/**
 * How a dialect reads a run's stream after `after`, to the tail it was given (`until`, a read
 * that does not wait) or live: its batches, then `'ended'` when what it serves ended (the stream
 * is over for that dialect: it closes at its final position), `'stopped'` when it stopped
 * before (at the tail, at a park nobody answered yet, or aborted).
 */
export type DialectReader = (
  after: Cursor,
  read: DialectRead & { until?: Cursor }
) => AsyncGenerator<SourceBatch, 'ended' | 'stopped'>

/**
 * A run's stream as a Durable Stream in JSON mode, in one dialect: its head and positions are
 * the run's (`run_state.ts`), its batches the dialect's, and once the dialect's served stream
 * ended the stream closes at its final position (a last batch, empty, says `closed`).
 */
export function runSource(
  core: RunCore,
  streamRunId: string,
  reader: DialectReader
): DurableSource {
  return {
    contentType: 'application/json',
    json: true,
    head: async () => (await runHead(core, streamRunId)) ?? { tail: { seq: 0 }, closed: false },
    has: (cursor) => runHas(core, streamRunId, cursor),
    batches: (after, read) => runBatches(core, streamRunId, reader, after, read),
  }
}

async function* runBatches(
  core: RunCore,
  streamRunId: string,
  reader: DialectReader,
  after: Cursor,
  read: DialectRead
): AsyncGenerator<SourceBatch> {
  // A stream that went away (purged) ends its readers: closed where the reader is (the next
  // request is a 404).
  const gone = (at: Cursor): SourceBatch => ({ messages: [], next: at, closed: true })
  const head = await runHead(core, streamRunId)
  if (!head) return yield gone(after)
  const reading = reader(after, { ...read, until: read.live ? undefined : head.tail })
  let step = await reading.next()
  let last = after
  while (!step.done) {
    yield step.value
    last = step.value.next
    step = await reading.next()
  }
  if (read.signal?.aborted) return
  if (!(await runHead(core, streamRunId))) return yield gone(last)
  // A read that does not wait read to the tail as it was: it closes only a stream that was
  // closed then (one that closed since has more for the next read).
  if (step.value !== 'ended' || (!read.live && !head.closed)) return
  const final = await finalPosition(core, streamRunId, read)
  if (final) yield { messages: [], next: final, closed: true }
}

import { formatCursor, type Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import { publicFrame, type ProjectionRules } from '../../core/projection.js'
import { positionOf } from '../../sink/read_path.js'
import type { SourceBatch } from '../source.js'
import { runSource, type DialectReader } from './run_source.js'
import { settledVerdict, type RunCore } from './run_state.js'
import { tracedItems } from '../../telemetry/traces/index.js'

/**
 * A run's stream as its stored frames, as the native stream route serves them: each frame
 * through the one public projection (`publicFrame`, the app's `agui` rules), one message per
 * frame, a batch per position (empty for a frame the projection keeps back). A segment end
 * shows nothing: past a park the stream goes on once someone decides; it closes when the run
 * is over (finished, failed) or its park was cancelled, after the last frame stored.
 */
export function framesSource(core: RunCore, streamRunId: string, rules: ProjectionRules) {
  return runSource(core, streamRunId, framesReader(core, streamRunId, rules))
}

function framesReader(core: RunCore, streamRunId: string, rules: ProjectionRules): DialectReader {
  return async function* (after: Cursor, read) {
    const stored = read.until
      ? core.sink.replay(streamRunId, {
          after,
          until: read.until,
          growing: true,
          signal: read.signal,
        })
      : core.sink.segments(streamRunId, { after, signal: read.signal })
    // A span of the request that reads (`agent_stream.replay` / `agent_stream.reattach`).
    const live = !read.until
    const items = tracedItems(stored, { streamRunId, cursor: formatCursor(after), live })
    for await (const item of items) {
      const at = positionOf(item)
      if (item.t !== 'end') {
        const served = publicFrame(frameOf(item), rules)
        yield { messages: served ? [served] : [], next: at } satisfies SourceBatch
        continue
      }
      const verdict = await settledVerdict(core, streamRunId, at.seq, read)
      if (verdict === null) return 'stopped'
      if (verdict !== 'goes-on') return yield* rest(core, streamRunId, at, rules)
      yield { messages: [], next: at }
    }
    return 'stopped'
  }
}

/** What follows the end of a run that is over (a cancelled park's settlements), then ended. */
async function* rest(
  core: RunCore,
  streamRunId: string,
  after: Cursor,
  rules: ProjectionRules
): AsyncGenerator<SourceBatch, 'ended'> {
  yield { messages: [], next: after }
  for await (const item of core.sink.replay(streamRunId, { after })) {
    if (item.t === 'end') continue
    const served = publicFrame(frameOf(item), rules)
    yield { messages: served ? [served] : [], next: positionOf(item) }
  }
  return 'ended'
}

/** A delivered frame without its cursor (the position is the batch's). */
function frameOf(item: object): StreamFrame {
  const frame: Record<string, unknown> = { ...item }
  delete frame.cursor
  return frame as unknown as StreamFrame
}

import type { DeliveredFrame } from '../core/frames.js'
import type { RunMeta } from '../core/run.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { DoorRunStore } from '../store/door_runs.js'
import { DEFAULTS } from '../defaults.js'
import { ownedBy } from '../core/owner.js'

/** How much of a thread's earlier turns a run is given (`history` in the config). */
export interface HistoryBounds {
  /** Earlier turns (runs of the thread) at most. Default {@link DEFAULTS}`.history.maxTurns`. */
  maxTurns?: number
  /** UTF-8 bytes (frames as JSON) of the earlier turns at most. Default `DEFAULTS.history.maxBytes`. */
  maxBytes?: number
}

/**
 * The thread's turns before this run (`RunContext.conversation()`): the streams its door runs
 * started (`agent_agui_runs`, both doors), the same owner's only, oldest first, each turn's
 * stored frames whole (segment ends left out; what the person said is its `user-message` frame).
 * Read newest first until the bounds: a turn that would pass `maxTurns` or `maxBytes` is left out
 * with every turn before it, so the oldest turns go, whole, and never half a turn.
 */
export async function earlierTurns(
  deps: { sink: LucidTokenStreamSink; runs: DoorRunStore },
  meta: RunMeta,
  bounds: HistoryBounds = {}
): Promise<DeliveredFrame[]> {
  const maxTurns = bounds.maxTurns ?? DEFAULTS.history.maxTurns
  const maxBytes = bounds.maxBytes ?? DEFAULTS.history.maxBytes
  if (maxTurns <= 0) return []
  const runs = await deps.runs.streams(meta.threadId)
  const streams = runs.filter((run) => ownedBy(run, meta.principal))
  const at = streams.findIndex((run) => run.streamRunId === meta.streamRunId)
  const before = at === -1 ? streams : streams.slice(0, at)
  const turns: DeliveredFrame[][] = []
  let bytes = 0
  for (const run of before.reverse()) {
    if (turns.length >= maxTurns) break
    const frames: DeliveredFrame[] = []
    let size = 0
    for await (const item of deps.sink.replay(run.streamRunId)) {
      if (item.t === 'end') continue
      size += Buffer.byteLength(JSON.stringify(item))
      frames.push(item)
      if (bytes + size > maxBytes) break
    }
    if (bytes + size > maxBytes) break
    bytes += size
    turns.push(frames)
  }
  return turns.reverse().flat()
}

import { compareCursors, START, type Cursor } from '../../core/cursor.js'
import type { UiMessageDoor } from '../../ui_message/door/index.js'
import { batchesOf } from './batches.js'
import { runSource, type DialectReader } from './run_source.js'
import { settledVerdict, type DialectRead, type RunCore } from './run_state.js'

/**
 * A run's stream as AI SDK UI message chunks, the useChat door's own (`UiMessageDoor.turn`):
 * the turn from its `start`, every segment of it, a reader waiting across each park until
 * someone decides (then the turn goes on, or finishes: the door's verdict); it closes once the
 * run is over. Offsets are the door's SSE ids (its stream cursors).
 */
export function uiMessageSource(door: UiMessageDoor, core: RunCore, streamRunId: string) {
  const reader: DialectReader = (after, read) =>
    turnBatches(door, streamRunId, after, read, (end) => settle(core, streamRunId, end, read))
  return runSource(core, streamRunId, reader)
}

/** A run-stream reader waits at a park until it is decided (`settledVerdict`). */
async function settle(core: RunCore, streamRunId: string, end: number, read: DialectRead) {
  return (await settledVerdict(core, streamRunId, end, read)) !== null
}

/**
 * The useChat door's turn from `from` (never before it) as batches after `after`; `settleAt` is
 * asked at each segment end (see `TurnRead.settle`). `'stopped'` when it said stop.
 */
export async function* turnBatches(
  door: UiMessageDoor,
  streamRunId: string,
  after: Cursor,
  read: DialectRead & { until?: Cursor },
  settleAt: (end: number) => Promise<boolean | 'finish'>,
  from: Cursor = START
) {
  let stopped = false
  const start = compareCursors(after, from) < 0 ? from : after
  const chunks = door.turn(streamRunId, start, {
    signal: read.signal,
    until: read.until,
    settle: async (end) => {
      const settled = await settleAt(end)
      if (settled === false) stopped = true
      return settled
    },
  })
  yield* batchesOf(chunks, after, compareCursors(after, from) > 0 ? 'first' : 'none')
  return stopped ? ('stopped' as const) : ('ended' as const)
}

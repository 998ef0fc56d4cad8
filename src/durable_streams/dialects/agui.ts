import { compareCursors, type Cursor } from '../../core/cursor.js'
import type { AgUiDoor } from '../../agui/door/index.js'
import { readAfterSegmentEnd } from '../../door/index.js'
import type { DoorRun } from '../../store/door_runs.js'
import type { SourceBatch } from '../source.js'
import { batchesOf } from './batches.js'
import { runSource } from './run_source.js'
import { settledVerdict, type DialectRead, type RunCore } from './run_state.js'

/**
 * A run's stream as AG-UI events, the AG-UI door's own (`AgUiDoor.segment`): one AG-UI run per
 * segment, each as the door serves it to the client that started it (`RUN_STARTED` ...
 * `RUN_FINISHED`), the continuation of each park under the run id the door gives it when it is
 * attached by thread (`continuationRun`). A reader waits across each park until someone
 * decides: the door ends that AG-UI run with its interrupt and the next one follows, or, when
 * the park is cancelled, the run goes on to the cancellation (the door's bounds); it closes
 * once the run is over. Offsets are the door's SSE ids that are stream cursors (a frame's last
 * event): the events of a frame are one batch.
 */
export function aguiSource(door: AgUiDoor, core: RunCore, streamRunId: string) {
  return runSource(core, streamRunId, (after, read) =>
    aguiBatches(door, core, streamRunId, after, read)
  )
}

async function* aguiBatches(
  door: AgUiDoor,
  core: RunCore,
  streamRunId: string,
  after: Cursor,
  read: DialectRead & { until?: Cursor }
): AsyncGenerator<SourceBatch, 'ended' | 'stopped'> {
  let run = await runAt(door, core, streamRunId, after)
  let position = after
  let again: number | null = null
  while (run) {
    const resumed = compareCursors(position, { seq: run.afterSeq }) > 0
    const reply = await door.segment(run, resumed ? position : undefined, read)
    if (reply.kind !== 'stream') return 'stopped'
    let last: (SourceBatch & { messages: unknown[] }) | null = null
    for await (const batch of batchesOf(reply.events, position, resumed ? 'unnamed' : 'none')) {
      if (batch.messages.some(endsRun)) {
        last = batch
        break
      }
      yield batch
      position = batch.next
    }
    if (!last) return 'stopped'
    if (last.messages.some((event) => typeOf(event) === 'RUN_ERROR')) {
      yield last
      return 'ended'
    }
    const end = last.next.seq
    const verdict = await settledVerdict(core, streamRunId, end, read)
    if (verdict === null) return 'stopped'
    // Cancelled while this run was served: the door's bounds now take the run on to the
    // cancellation; serve the rest of it again from where this reader is.
    if (verdict === 'cancelled' && again !== end && (await isSegmentEnd(core, streamRunId, end))) {
      again = end
      continue
    }
    yield last
    position = last.next
    if (verdict !== 'goes-on') return 'ended'
    run = await door.continuation(run, end)
  }
  return 'stopped'
}

/** The AG-UI run of the stream whose segment holds `after` (at a run's end: the next one). */
async function runAt(
  door: AgUiDoor,
  core: RunCore,
  streamRunId: string,
  after: Cursor
): Promise<DoorRun | null> {
  let run = await door.runs.find(streamRunId)
  if (!run || run.streamRunId !== streamRunId) return null
  while (true) {
    const end = await core.sink.segmentEnd(streamRunId, run.afterSeq)
    if (end === null || after.seq < end) return run
    const { verdict } = await readAfterSegmentEnd(core, streamRunId, end)
    if (verdict !== 'goes-on') return run
    const next = await door.continuation(run, end)
    if (!next) return null
    run = next
  }
}

async function isSegmentEnd(core: RunCore, streamRunId: string, seq: number) {
  return (await core.sink.segmentEnd(streamRunId, seq - 1)) === seq
}

const typeOf = (event: unknown) => (event as { type?: string }).type

/** The event that ends an AG-UI run. */
const endsRun = (event: unknown) => {
  const type = typeOf(event)
  return type === 'RUN_FINISHED' || type === 'RUN_ERROR'
}

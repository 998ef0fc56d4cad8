import { isRunId } from '../../core/frames.js'
import type { DoorRun } from '../../store/door_runs.js'
import { continuationRunId } from '../ids.js'
import type { Principal } from '../../core/run.js'
import { AGUI_POSITIONS } from './position.js'
import { checkedPosition, notFound, ownedBy, streamGoesOn } from '../../door/index.js'
import type { AgUiDeps, AgUiReply } from './reply.js'
import { serveRun } from './serve.js'
import { queuedEvents } from './queued.js'
import { recordReattach } from '../../telemetry/metrics/index.js'

/**
 * Re-attach to an AG-UI run after `after` (the SSE `Last-Event-ID` or `?after=`): the run from
 * its `RUN_STARTED`, a join prelude, then the rest. Without `after`, the prelude starts with a
 * `MESSAGES_SNAPSHOT` of the thread before this run (its user message included), so a client
 * restoring the thread gets it in order. 404 when there is no such run (or it is
 * someone else's); 400 `invalid_cursor` for an id the door did not mint (`position.ts`) or one
 * past the stream's stored head (never given by any replica: followed, it would wait for frames
 * that may never come, and skip those that do).
 */
export async function reattach(
  deps: AgUiDeps,
  runId: string,
  after: string | undefined,
  principal: Principal | null,
  signal?: AbortSignal
): Promise<AgUiReply> {
  // The run and its stream's row in one read: the rest needs the row (existence, head, rev).
  const found = isRunId(runId) ? await deps.runs.findWithStream(runId) : null
  if (!found) return reattachQueued(deps, runId, principal, signal)
  if (!ownedBy(found.run, principal)) return notFound()
  const { run, stream } = found
  if (!stream) return notFound()
  const checked = await checkedPosition(deps.sink, run.streamRunId, after, AGUI_POSITIONS, stream)
  if ('kind' in checked) return checked
  const { position } = checked
  recordReattach('agui')
  // Without a cursor the client has nothing: the transcript before this run comes first.
  return serveRun(deps, run, position, signal, { prelude: position === undefined, stream })
}

/**
 * A run id of a message still waiting in its thread's queue (`enqueue`): its client (gone, back)
 * gets what the enqueue answered: `RUN_STARTED`, its place, then the run once it starts. 404
 * when it is not queued (or another principal's).
 */
async function reattachQueued(
  deps: AgUiDeps,
  runId: string,
  principal: Principal | null,
  signal?: AbortSignal
): Promise<AgUiReply> {
  const waiting = isRunId(runId) ? await deps.queue.find(runId) : null
  if (!waiting || !ownedBy(waiting, principal)) return notFound()
  return { kind: 'stream', streamRunId: runId, events: queuedEvents(deps, waiting, signal) }
}

/**
 * Attach by thread (what a `connect(threadId)` client asks): the thread's current AG-UI run from
 * `after`. When its segment parked and the run went on because someone answered elsewhere (the
 * admin page, the decision API), the continuation becomes an AG-UI run of its own (a run id
 * derived from the stream and the park's end, the same on every replica, in a namespace no
 * client may use) and that is served.
 * 404 when the thread has no run (or it is someone else's).
 */
export async function attachThread(
  deps: AgUiDeps,
  threadId: string,
  after: string | undefined,
  principal: Principal | null,
  signal?: AbortSignal
): Promise<AgUiReply> {
  let run = isRunId(threadId) ? await deps.runs.latest(threadId) : null
  if (!run || !ownedBy(run, principal)) return notFound()
  while (true) {
    const end = await deps.sink.segmentEnd(run.streamRunId, run.afterSeq)
    if (end === null) break
    if (!(await streamGoesOn(deps, run.streamRunId, end))) break
    const next = await continuationRun(deps, run, end)
    if (!next) return notFound()
    run = next
  }
  return reattach(deps, run.runId, after, principal, signal)
}

/**
 * The AG-UI run that continues `run`'s stream after its segment ended at `end` (the stream goes
 * on from there): a run id derived from the stream and the park's end, the same on every
 * replica, in the door's own namespace (no client can have taken it: `continuationRunId`),
 * recorded once. `null` when that id names a run of another stream.
 */
export async function continuationRun(
  deps: AgUiDeps,
  run: DoorRun,
  end: number
): Promise<DoorRun | null> {
  const runId = continuationRunId(run.streamRunId, end)
  const next = {
    runId,
    threadId: run.threadId,
    streamRunId: run.streamRunId,
    afterSeq: end,
    kind: 'resume' as const,
    resumeHash: null,
    ownerId: run.ownerId,
    clientTools: run.clientTools,
  }
  await deps.runs.insert(next)
  const found = await deps.runs.find(runId)
  return found && found.streamRunId === run.streamRunId ? found : null
}

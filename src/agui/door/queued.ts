import { EventType } from '@ag-ui/core'
import type { Principal } from '../../core/run.js'
import { queueFull, refused, threadBusy, waitForStart } from '../../door/index.js'
import { NO_QUEUE } from '../../runner/run_queue.js'
import type { DoorRun } from '../../store/door_runs.js'
import { DEFAULTS } from '../../defaults.js'
import type { AgUiDeps, AgUiReply, SseItem } from './reply.js'
import { serveRun } from './serve.js'
import type { PreparedStart } from './start.js'

/**
 * `multitaskStrategy: 'enqueue'` on the AG-UI door: the message waits in its thread's queue
 * (`runner/run_queue.ts`) and its client gets the queued run's stream at once: `RUN_STARTED`
 * (the run's own ids), a `CUSTOM` event `queued` with its place (`{ position }`, 1: next; again
 * each time it moves), then, once a replica started the run, the run as any client of it gets
 * it (its own `RUN_STARTED` left out: the client had it). A full queue: 409 `queue_full`, nothing
 * written; a schema without the queue's table answers as `reject` (409 `thread_busy`).
 */
export async function enqueueRun(
  deps: AgUiDeps,
  prepared: PreparedStart,
  busy: DoorRun,
  principal: Principal | null,
  signal?: AbortSignal
): Promise<AgUiReply> {
  const { runId } = prepared.run
  const used = (await deps.runs.find(runId)) || (await deps.sink.has(runId))
  if (used || (await deps.queue.placeOf(runId)) !== null) {
    return refused(409, 'run_id_used', 'This run id is already used.')
  }
  const queued = await deps.queue.enqueue({ ...prepared, principal })
  if (queued === NO_QUEUE) return threadBusy(busy)
  if ('full' in queued) return queueFull(deps.queue.maxPerThread)
  return {
    kind: 'stream',
    streamRunId: prepared.run.runId,
    events: queuedEvents(deps, prepared.run, signal),
  }
}

/** The queued run's events: its opening, its place while it waits, then the run itself. */
export async function* queuedEvents(
  deps: AgUiDeps,
  run: { runId: string; threadId: string },
  signal?: AbortSignal
): AsyncGenerator<SseItem> {
  const { runId, threadId } = run
  yield { event: { type: EventType.RUN_STARTED, threadId, runId } }
  for await (const state of waitForStart(deps, runId, DEFAULTS.queuedPollMs, signal)) {
    if ('place' in state) {
      yield { event: { type: EventType.CUSTOM, name: 'queued', value: { position: state.place } } }
    } else if ('dropped' in state) {
      const message = 'The queued message could not start: send it again.'
      yield { event: { type: EventType.RUN_ERROR, code: 'queue_dropped', message } }
      return
    } else {
      const reply = await serveRun(deps, state.run, undefined, signal)
      if (reply.kind !== 'stream') return
      let first = true
      for await (const item of reply.events) {
        if (first && item.event.type === EventType.RUN_STARTED) {
          first = false
          continue
        }
        first = false
        yield item
      }
      return
    }
  }
}

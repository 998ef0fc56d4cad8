import type { Principal } from '../../core/run.js'
import { START } from '../../core/cursor.js'
import { queueFull, threadBusy, waitForStart } from '../../door/index.js'
import { NO_QUEUE, type QueuedStart } from '../../runner/run_queue.js'
import type { DoorRun } from '../../store/door_runs.js'
import { DEFAULTS } from '../../defaults.js'
import type { UiChunkItem, UiDoorDeps, UiDoorReply } from './reply.js'
import { turnChunks } from './turn.js'

/**
 * `multitaskStrategy: 'enqueue'` on the useChat door: the message waits in its chat's queue
 * (`runner/run_queue.ts`) and the page gets its turn at once: `start` with the turn's message id,
 * a transient data part `data-queued` with its place (`{ position }`, 1: next; again each time
 * it moves: `useChat`'s `onData` sees it, the message keeps none), then, once a replica started
 * the turn, the turn as a resume of it gets it (its own `start` left out: the page had it). A
 * full queue: 409 `queue_full`, nothing written; a schema without the queue's table answers as
 * `reject` (409 `thread_busy`).
 */
export async function enqueueTurn(
  deps: UiDoorDeps,
  start: Omit<QueuedStart, 'principal'>,
  busy: DoorRun,
  principal: Principal | null,
  signal?: AbortSignal
): Promise<UiDoorReply> {
  const queued = await deps.queue.enqueue({ ...start, principal })
  if (queued === NO_QUEUE) return threadBusy(busy)
  if ('full' in queued) return queueFull(deps.queue.maxPerThread)
  const { runId } = start.run
  return { kind: 'stream', streamRunId: runId, events: queuedChunks(deps, runId, signal) }
}

async function* queuedChunks(
  deps: UiDoorDeps,
  runId: string,
  signal?: AbortSignal
): AsyncGenerator<UiChunkItem> {
  yield { event: { type: 'start', messageId: runId } }
  for await (const state of waitForStart(deps, runId, DEFAULTS.queuedPollMs, signal)) {
    if ('place' in state) {
      const data = { position: state.place }
      yield { event: { type: 'data-queued', data, transient: true } }
    } else if ('dropped' in state) {
      yield { event: { type: 'error', errorText: 'The queued message could not start.' } }
      return
    } else {
      let first = true
      for await (const item of turnChunks(deps, state.run.streamRunId, START, signal)) {
        if (first && item.event.type === 'start') {
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

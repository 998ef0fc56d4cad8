import { EventEmitter } from 'node:events'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { DoorRunStore } from '../store/door_runs.js'
import type { Enqueued, RunQueueRows } from '../store/run_queue.js'
import { isMissingTable } from '../store/checkpoint_rows.js'
import type { Principal } from '../core/run.js'
import type { UserMessage } from '../core/user_message.js'
import { ReplicaShutdownError } from '../errors.js'
import { DEFAULTS } from '../defaults.js'
import type { RunDriver } from './driver.js'
import { startRun, THREAD_TAKEN, TURN_TAKEN, type NewRun } from './door_runs.js'

/**
 * The busy-thread queue (`multitaskStrategy: 'enqueue'`, LangGraph's name): a message that finds
 * its thread's run talking waits, in order, and starts when that run ends (finished, failed,
 * cancelled; a run that parks keeps it waiting until it ends). Durable (`store/run_queue.ts`):
 * the replica whose run ends starts the next one (the driver's `onStreamEnd`), and every
 * replica's sweeper starts the first message of any idle thread (a replica that died in between).
 * Each message is started by exactly one replica: its claim is one UPDATE.
 */

/** What starting a queued message takes: what {@link startRun} is given. */
export interface QueuedStart {
  run: NewRun
  input: unknown
  principal: Principal | null
  said: UserMessage | null
}

export interface RunQueueDeps {
  sink: LucidTokenStreamSink
  runs: DoorRunStore
  driver: RunDriver
  rows: RunQueueRows
  /**
   * The thread's newest run when it ended (not talking, not parked, not about to go on): a
   * queued message starts as the turn after it (`after`, `null` for none); `null` while busy.
   */
  idleAfter: (threadId: string) => Promise<{ after: string | null } | null>
  /** Messages one thread's queue holds at most. Default {@link DEFAULTS}`.maxQueuedRuns`. */
  maxPerThread?: number
  /** A claim not followed by a start within this long is claimable again. */
  claimLeaseMs?: number
  onError?: (error: unknown) => void
}

/** A queue of a schema migrated before `createRunQueueTable`: enqueueing is refused. */
export const NO_QUEUE = 'no_queue'

export class RunQueue {
  readonly #deps: RunQueueDeps
  /** This replica's starts, so its own waiting readers learn of one at once (others poll). */
  readonly #started = new EventEmitter().setMaxListeners(0)

  constructor(deps: RunQueueDeps) {
    this.#deps = deps
  }

  get maxPerThread() {
    return this.#deps.maxPerThread ?? DEFAULTS.maxQueuedRuns
  }

  /** Queue `start` behind its thread's run: its place, `full`, or {@link NO_QUEUE}. */
  async enqueue(start: QueuedStart): Promise<Enqueued | typeof NO_QUEUE> {
    const { run } = start
    let queued: Enqueued
    try {
      queued = await this.#deps.rows.enqueue(
        { runId: run.runId, threadId: run.threadId, ownerId: run.ownerId, start },
        this.maxPerThread
      )
    } catch (error) {
      if (isMissingTable(error)) return NO_QUEUE
      throw error
    }
    // The run it waits for may have ended between the door's look and the enqueue (its end
    // found the queue empty): started now if the thread is idle, not at the sweeper's round.
    if (!('full' in queued)) {
      this.startNext(run.threadId).catch((error) => this.#deps.onError?.(error))
    }
    return queued
  }

  /** How many messages wait in the thread's queue. */
  length(threadId: string) {
    return this.#deps.rows.length(threadId)
  }

  /** A queued message (its run id, thread, owner), or `null` once it waits no more. */
  find(runId: string) {
    return this.#deps.rows.find(runId)
  }

  /** A queued message's place (1: next), or `null` once it waits no more. */
  placeOf(runId: string) {
    return this.#deps.rows.placeOf(runId)
  }

  /** Resolves when this replica starts `runId` (or after `ms`, or when `signal` aborts). */
  startedHere(runId: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.#started.off(runId, done)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.#started.once(runId, done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }

  /**
   * Start the first message of `threadId`'s queue if the thread is idle: claimed first (one
   * replica wins), the thread checked idle again after the claim (a run started since holds it), then
   * started as its door would have ({@link startRun}) and its row deleted. A message whose run
   * id got taken meanwhile (it started before a crash) is dropped and the next one tried.
   * Returns whether this call started one. A draining replica starts nothing.
   */
  async startNext(threadId: string): Promise<boolean> {
    const { rows, driver } = this.#deps
    const leaseMs = this.#deps.claimLeaseMs ?? DEFAULTS.claimLeaseMs
    for (;;) {
      if (driver.draining) return false
      const head = await rows.head(threadId)
      // Claimed by a replica starting it, or the thread's run talks: nothing to do here (and
      // no write to find it out: the claim below is a write).
      if (!head || !rows.claimable(head) || !(await this.#deps.idleAfter(threadId))) return false
      if (!(await rows.claim(head.runId, driver.replicaId, leaseMs))) return false
      let started
      try {
        // Checked after the claim: a run started since (by whoever claimed before) holds it.
        const idle = await this.#deps.idleAfter(threadId)
        const { run, input, principal, said } = head.start as QueuedStart
        started = idle && (await startRun(this.#deps, run, input, principal, said, idle.after))
        // Busy again (a message sent meanwhile started first): it waits for that run's end.
        if (!idle || started === TURN_TAKEN) {
          await rows.release(head.runId, driver.replicaId)
          return false
        }
      } catch (error) {
        // Given back at once (not left to lapse): the next try, here or elsewhere, starts it.
        await rows.release(head.runId, driver.replicaId).catch(() => {})
        if (error instanceof ReplicaShutdownError) return false
        throw error
      }
      await rows.remove(head.runId)
      this.#started.emit(head.runId)
      if (started && started !== THREAD_TAKEN) return true
    }
  }

  /**
   * The sweeper's round: start the first message of every thread with messages waiting whose
   * run ended (a replica that died between a run's end and the next start). Returns how many.
   */
  async startIdle(limit: number = DEFAULTS.sweepBatch): Promise<number> {
    let started = 0
    for (const threadId of await this.#deps.rows.threads(limit)) {
      try {
        if (await this.startNext(threadId)) started++
      } catch (error) {
        this.#deps.onError?.(error)
      }
    }
    return started
  }
}

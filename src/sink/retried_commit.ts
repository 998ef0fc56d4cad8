import { randomBytes } from 'node:crypto'
import { StreamClosedError } from '../errors.js'
import { FAILURE_SENTENCES, type StreamFrame } from '../core/frames.js'
import type { AppendPlan, CommitResult } from '../store/append_plan.js'
import { isTransientError } from '../store/transient.js'
import { appendFrames, type AppendContext } from './append.js'
import type { AgentStateCheck } from './agent_state_check.js'
import type { Outage } from './outage.js'
import { lifecycleIds, NO_LIFECYCLE } from '../core/lifecycle.js'

/**
 * One writer's commits through the sink's one write path ({@link appendFrames}), made safe to
 * retry. Each commit carries a token of the writer's (a random prefix and a counter) that the
 * store writes on every row it inserts or grows; when an attempt fails with a transient error its
 * outcome is unknown (the connection may have dropped during COMMIT), so the next attempt, under
 * the stream row's lock, first looks for rows with that token and, when it finds them, takes them
 * as the result instead of writing again. A commit is therefore stored exactly once, in order,
 * with seqs allocated as for any other.
 */
export class RetriedCommits {
  #prefix = randomBytes(12).toString('base64url')
  #count = 0
  /** The highest seq this writer knows is stored (a retry looks for its token from there). */
  lastSeq: number

  constructor(
    readonly context: AppendContext,
    readonly runId: string,
    lastSeq = 0,
    /** The writer epoch every commit is made under (fencing; see `AppendPlan.epoch`). */
    readonly epoch?: number,
    /** The agent's state as this writer's commits left it (checked in each commit). */
    readonly agentState?: AgentStateCheck
  ) {
    this.lastSeq = lastSeq
  }

  /**
   * Append `plan`, retrying transient failures with the same token (set here, with `retried` and
   * `sinceSeq`): `outage` is told of each failure and paces the retries; after each pause
   * `giveUp()` may end them.
   *
   * @returns the result (`landed` when an earlier attempt had stored it) and the milliseconds
   *   its successful attempt took
   * @throws what `appendFrames` throws that is not transient (StreamClosedError, ...), the
   *   error `giveUp()` returns, or the last one once `outage` is stopped
   */
  async append(
    plan: AppendPlan,
    outage: Outage,
    giveUp: () => Error | null
  ): Promise<{ result: CommitResult | null; ms: number }> {
    const token = this.#token()
    let retried = false
    while (true) {
      const started = performance.now()
      try {
        const result = await appendFrames(
          this.context,
          this.runId,
          {
            ...plan,
            epoch: this.epoch,
            token,
            retried,
            // A text row it grows may lie before the last seq it saw.
            sinceSeq: Math.min(this.lastSeq, plan.text?.seq ?? this.lastSeq),
          },
          this.agentState
        )
        outage.recovered()
        if (result) this.#saw(result)
        return { result, ms: performance.now() - started }
      } catch (error) {
        if (!isTransientError(error)) throw error
        retried = true
        outage.failed()
        await outage.pause()
        const stop = giveUp() ?? (outage.stopped ? error : null)
        if (stop) throw stop
      }
    }
  }

  /**
   * Append the fixed failure (`error run_failed`) and the end (`failed`), retrying transient
   * failures under `retry` until it is stored, the stream turns out closed elsewhere (nothing to
   * do), or `retry` is stopped. An error trying again does not cure (a constraint, a trigger
   * refusing the stream's rows) is reported to `onError` and ends the attempts: the stream is
   * then left to its lease (the writer stopped renewing it), as a crash leaves it. The pauses do
   * not keep the process alive: a process that exits first leaves the stream to its lease too.
   *
   * @returns whether the stream is ended (stored here, or closed elsewhere)
   */
  async fail(retry: Outage, onError?: (error: unknown) => void): Promise<boolean> {
    const frame: StreamFrame = {
      t: 'error',
      code: 'run_failed',
      message: FAILURE_SENTENCES.run_failed,
    }
    const token = this.#token()
    let retried = false
    while (!retry.stopped) {
      try {
        await appendFrames(
          this.context,
          this.runId,
          {
            frames: [frame],
            end: 'failed',
            epoch: this.epoch,
            token,
            retried,
            sinceSeq: this.lastSeq,
            // The run's end for other systems (the webhook outbox), in the same commit.
            within: (trx) =>
              (this.context.lifecycle ?? NO_LIFECYCLE).record(trx, {
                type: 'run.failed',
                data: {
                  ...lifecycleIds({ runId: this.runId, streamRunId: this.runId }, 'failed'),
                  code: 'run_failed',
                },
              }),
          },
          this.agentState
        )
        return true
      } catch (error) {
        if (error instanceof StreamClosedError) return true
        if (!isTransientError(error)) {
          onError?.(error)
          return false
        }
        retried = true
        retry.failed()
        await retry.pause({ keepAlive: false })
      }
    }
    return false
  }

  #token() {
    return `${this.#prefix}.${(++this.#count).toString(36)}`
  }

  #saw(result: CommitResult) {
    this.lastSeq = Math.max(this.lastSeq, result.grown?.seq ?? 0, result.rows.at(-1)?.seq ?? 0)
  }
}

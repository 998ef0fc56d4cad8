import type { LifecycleRecorder } from '../core/lifecycle.js'
import type { Tail } from '../follow/tail.js'
import type { AppendPlan, CommitResult } from '../store/append_plan.js'
import type { StreamStore } from '../store/stream_store.js'
import { validateFrame } from './validate.js'
import { AgentStateCheck } from './agent_state_check.js'
import { DEFAULTS } from '../defaults.js'
import { recordCommit } from '../telemetry/metrics/index.js'

/** What appending needs of the sink: its store, this replica's tail and the frame size cap. */
export interface AppendContext {
  store: StreamStore
  tail: Tail
  /** Cap on one frame's serialized size, in bytes. */
  maxFrameBytes: number
  /** Cap on the agent's state as its `state` frames leave it, in bytes of JSON (default 64 KiB). */
  maxStateBytes?: number
  /** Where a lost run's failure is recorded as a lifecycle event (the webhook outbox). */
  lifecycle?: LifecycleRecorder
}

/**
 * THE write path: validate the plan's frames (unless `validated`), commit them (with held text,
 * an end marker, `stamp`, `within`) in one transaction, then hand the result to this replica's
 * tail (persist, then publish). Notifications for the stream wait for the hand-over. Its
 * `state` frames are checked in the transaction against the state the stored rows leave
 * (`agentState`: a writer's, which knows it after its own commits; else one for this append).
 *
 * @returns the commit's result; `null` when nothing was to write, or with `onlyIfLeaseLapsed`
 *   when the lease had not lapsed
 * @throws InvalidFrameError (nothing stored), StreamClosedError (the stream is not open, or with
 *   `evenIfClosed` does not exist), or what `stamp` or `within` throws (rolled back)
 */
export async function appendFrames(
  ctx: AppendContext,
  runId: string,
  plan: AppendPlan,
  agentState?: AgentStateCheck
): Promise<CommitResult | null> {
  const valid: AppendPlan = plan.validated
    ? plan
    : {
        ...plan,
        frames: await Promise.all(
          plan.frames.map((frame) => validateFrame(frame, ctx.maxFrameBytes))
        ),
        validated: true,
      }
  if (valid.frames.length === 0 && !valid.end && !valid.text?.text) return null
  const state =
    agentState ?? new AgentStateCheck(ctx.maxStateBytes ?? DEFAULTS.maxStateBytes, ctx.store.tables)
  const { stamp, committed } = state.attempt(runId, valid.frames, valid.stamp)
  const settle = ctx.tail.commitStarted(runId)
  let result: CommitResult | null
  try {
    result = await ctx.store.commit(runId, stamp === valid.stamp ? valid : { ...valid, stamp })
  } catch (error) {
    settle(null)
    throw error
  }
  committed(result)
  settle(result)
  recordCommit(ctx.store.dialect, result)
  return result
}

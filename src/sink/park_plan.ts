import type { RunMeta } from '../core/run.js'
import type { StreamFrame } from '../core/frames.js'
import type { AppendPlan } from '../store/append_plan.js'
import type { ParkHook } from './writer_options.js'

/**
 * The commit that stores an `approval` or `elicitation` frame and parks it (`park`, as `meta`'s
 * run) in the same transaction: once the frame's seq is allocated, the park it opened or joined
 * is stamped into the stored frame (`park`). Which park a frame is part of is known only then:
 * every reader, live or replayed, gets it in the frame, so a decision can name it. The row is
 * inserted once, with it.
 */
export function parkPlan(
  frame: Extract<StreamFrame, { t: 'approval' | 'elicitation' }>,
  meta: RunMeta,
  park: ParkHook
): AppendPlan {
  return {
    frames: [frame],
    stamp: async (trx, rows) => {
      const row = rows.find((r) => r.kind === frame.t)!
      const number = await park(trx, meta, frame, row.seq)
      row.body = JSON.stringify({ ...frame, park: number })
    },
  }
}

import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { StreamFrame } from '../core/frames.js'
import type { Tail } from '../follow/tail.js'
import type {
  CommitPlan,
  CommitResult,
  NewRow,
  StoredRow,
  StreamStore,
} from '../store/stream_store.js'
import { validateFrame } from './validate.js'

/** What appending needs of the sink: its store, this replica's tail and the frame size cap. */
export interface AppendContext {
  store: StreamStore
  tail: Tail
  /** Cap on one frame's serialized size, in bytes. */
  maxFrameBytes: number
}

/** What to append to a stream in one transaction (see `LucidTokenStreamSink.append`). */
export interface AppendPlan {
  /** End the segment after the frames: `ended` (`SinkWriter.end()`) or `failed` (a dead writer). */
  end?: 'ended' | 'failed'
  /**
   * Runs inside the transaction once the rows are inserted (parking rows, decisions), with the
   * rows as stored (seqs allocated). Throwing rolls the whole append back.
   */
  within?: (trx: TransactionClientContract, rows: StoredRow[]) => Promise<void>
  /** Only append when the writer's lease has lapsed (fails a dead writer's stream exactly once). */
  onlyIfLeaseLapsed?: boolean
  /**
   * Also append to a stream that ended or failed (a settlement written after a run parked): its
   * status stays, and an end marker closes what was appended so readers still end.
   */
  evenIfClosed?: boolean
}

/** `LucidTokenStreamSink.append`'s argument: the frames and how to append them. */
export interface AppendRequest extends AppendPlan {
  /** Frames to store, in order (validated first: one invalid frame and nothing is stored). */
  frames: StreamFrame[]
}

/** A writer's extra: the text it holds, its row to grow, its lease, and frames it validated. */
export interface WriterAppend extends AppendPlan {
  text?: CommitPlan['text']
  /** Renew the writer's lease to now + this many milliseconds. */
  leaseMs?: number
  /** The frames were validated when written (the writer must, to coalesce text). */
  validated?: boolean
  /** The commit's token, and whether an earlier attempt's outcome is unknown (`CommitPlan`). */
  token?: CommitPlan['token']
  retried?: CommitPlan['retried']
  sinceSeq?: CommitPlan['sinceSeq']
}

/** The row a (validated) frame is stored as: a text row holds its text, any other its JSON. */
export function frameRow(frame: StreamFrame): NewRow {
  return {
    kind: frame.t,
    body: frame.t === 'text' ? frame.v : JSON.stringify(frame),
    componentId: frame.t === 'component' ? (frame.id ?? null) : null,
  }
}

/**
 * THE write path: validate the frames, build their rows, commit them (with held text, an end
 * marker, `within`) in one transaction, then hand the result to this replica's tail (persist
 * then publish, DESIGN.md invariant 1). Notifications for the stream wait for the hand-over.
 *
 * @returns the commit's result; `null` when nothing was to write, or with `onlyIfLeaseLapsed`
 *   when the lease had not lapsed
 * @throws InvalidFrameError (nothing stored), StreamClosedError (the stream is not open, or with
 *   `evenIfClosed` does not exist), or what `within` throws (rolled back)
 */
export async function appendFrames(
  ctx: AppendContext,
  runId: string,
  frames: StreamFrame[],
  plan: WriterAppend = {}
): Promise<CommitResult | null> {
  const valid = plan.validated
    ? frames
    : await Promise.all(frames.map((frame) => validateFrame(frame, ctx.maxFrameBytes)))
  const rows = valid.map(frameRow)
  if (plan.end) rows.push({ kind: 'end', body: '' })
  if (rows.length === 0 && !plan.text?.text) return null
  const settle = ctx.tail.commitStarted(runId)
  let result: CommitResult | null
  try {
    result = await ctx.store.commit(runId, {
      rows,
      text: plan.text,
      endStatus: plan.end,
      leaseMs: plan.end ? undefined : plan.leaseMs,
      within: plan.within,
      onlyIfLeaseLapsed: plan.onlyIfLeaseLapsed,
      evenIfClosed: plan.evenIfClosed,
      token: plan.token,
      retried: plan.retried,
      sinceSeq: plan.sinceSeq,
    })
  } catch (error) {
    settle(null)
    throw error
  }
  settle(result)
  return result
}

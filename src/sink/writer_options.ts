import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { RunMeta } from '../core/run.js'
import type { StreamFrame } from '../core/frames.js'

/**
 * Called inside the transaction that stores an `approval` or `elicitation` frame, once its seq
 * is allocated and before its row is inserted, so the parking row and the suspension commit with
 * the frame or not at all. Resolves to the park the frame opened or joined, which is stamped
 * into the stored frame (`park`): the row is written once, with it.
 */
export type ParkHook = (
  trx: TransactionClientContract,
  meta: RunMeta,
  frame: Extract<StreamFrame, { t: 'approval' | 'elicitation' }>,
  seq: number
) => Promise<number>

export interface WriterOptions {
  /** Longest time text is held back before it is written, in milliseconds. */
  coalesceWindowMs: number
  /** A text row stops growing past this many UTF-16 code units; more text starts a new row. */
  maxTextRowChars: number
  /** Cap on one frame's serialized size, in bytes. */
  maxFrameBytes: number
  /** Cap on the agent's state (`state` frames), in bytes of JSON. Default 64 KiB. */
  maxStateBytes?: number
  /** The writer's lease, in milliseconds: renewed while it is open, lapses if the process dies. */
  leaseMs: number
  /** The run writing (a delegated run's own id, parent, thread, principal). */
  meta: RunMeta
  /** Parks approvals and elicitations in the frame's transaction; none = they are stored only. */
  park?: ParkHook
  /** How long the run survives the database being unreachable, in milliseconds. */
  outageBoundMs: number
  /** Most bytes (UTF-8) of frames held in memory while the database is unreachable. */
  outageBufferBytes: number
  /** The stream's last seq when the writer opened it (narrows a retried commit's look-up). */
  openedAtSeq?: number
  /**
   * The writer epoch it holds the stream under (from its open or takeover): every commit and
   * lease renewal checks it, so once another replica took the stream over this writer writes
   * nothing more (`LeaseLostError`).
   */
  epoch?: number
  /** Told about a failure the writer could not record in the stream (it keeps going). */
  onError?: (error: unknown) => void
}

/**
 * A stream's writer's options from its sink's (resolved) options: for `runId`, opened at
 * `openedAtSeq` under `epoch`, writing as `meta` (the stream's own run unless a delegated one).
 */
export function writerOptionsFor(
  sink: Pick<
    WriterOptions,
    | 'coalesceWindowMs'
    | 'maxTextRowChars'
    | 'maxFrameBytes'
    | 'maxStateBytes'
    | 'leaseMs'
    | 'outageBoundMs'
    | 'outageBufferBytes'
  >,
  hooks: Pick<WriterOptions, 'onError' | 'park'>,
  runId: string,
  meta: Partial<Omit<RunMeta, 'streamRunId'>>,
  openedAtSeq: number,
  epoch: number
): WriterOptions {
  return {
    coalesceWindowMs: sink.coalesceWindowMs,
    maxTextRowChars: sink.maxTextRowChars,
    maxFrameBytes: sink.maxFrameBytes,
    maxStateBytes: sink.maxStateBytes,
    leaseMs: sink.leaseMs,
    outageBoundMs: sink.outageBoundMs,
    outageBufferBytes: sink.outageBufferBytes,
    openedAtSeq,
    epoch,
    ...hooks,
    meta: {
      runId: meta.runId ?? runId,
      streamRunId: runId,
      threadId: meta.threadId ?? runId,
      parentRunId: meta.parentRunId ?? null,
      principal: meta.principal ?? null,
    },
  }
}

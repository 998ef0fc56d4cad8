import type { RunMeta } from '../core/run.js'
import type { AgentStreamEvent, StreamFrame } from '../core/frames.js'

/**
 * The event kind the replica that takes a dead writer's segment over writes first (in the
 * takeover's commit), so the stream says where the continuation begins. Not sent by the doors
 * unless allow-listed (`agui.custom`).
 */
export const SEGMENT_CONTINUED = 'segment-continued'

/** The frame that records a takeover (a kind of the package's, unknown to the SPI's readers). */
export const continuedFrame = (): StreamFrame => ({
  t: 'event',
  event: { kind: SEGMENT_CONTINUED } as unknown as AgentStreamEvent,
})

/**
 * What the driver records with a segment's (re)open in the stream's row (`segment`, never
 * served), so that another replica can continue the segment if its writer dies: the run that
 * writes it (its meta), the input it was given, and for a resume the parks it resumed (their
 * checkpoint and settled items are read again from the suspension rows).
 */
export interface SegmentRecord {
  meta: Omit<RunMeta, 'streamRunId'>
  input: unknown
  parks?: { runId: string; park: number }[]
}

/** The record of a segment of `meta`'s run, given `input` (and `parks`, for a resume). */
export function segmentRecord(
  meta: RunMeta,
  input: unknown,
  parks?: { runId: string; park: number }[]
): SegmentRecord {
  const { runId, threadId, parentRunId, principal } = meta
  return {
    meta: { runId, threadId, parentRunId, principal },
    input: input ?? null,
    ...(parks ? { parks } : {}),
  }
}

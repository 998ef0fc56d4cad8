import type { Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import type { ReplayItem } from '../../checkpoints/index.js'
import type { ServedStep } from '../../door/index.js'
import type { DoorRun } from '../../store/door_runs.js'
import { FrameTranslator, type AgUiEvent } from '../translate/index.js'
import { withinFrameId } from './position.js'
import { sendsSnapshot, type AgUiDeps, type SseItem } from './reply.js'
import type { SegmentBounds } from './segment.js'
import { closingEvents } from './transcript.js'

/** The AG-UI run's identity its events carry. */
export type Identity = { threadId: string; runId: string }

/** A fresh translator for `run` on this door (its options, the run's snapshot rule and tools). */
export function runTranslator(deps: AgUiDeps, run: DoorRun) {
  return new FrameTranslator({
    ...deps.options,
    messagesSnapshot: sendsSnapshot(deps.options, run),
    streamRunId: run.streamRunId,
    clientTools: run.clientTools,
  })
}

/**
 * One delivered item's events, and whether the AG-UI run ends with them (its error ends it
 * too). A segment end ends the AG-UI run (closing events, then `RUN_FINISHED`), except the end
 * of a park that was cancelled afterwards: the run goes on to the cancellation's end, and that
 * park's end only closes what its segment had open. Synchronous but for the closing (its
 * transcript may be read).
 */
export function eventsOf(
  deps: AgUiDeps,
  run: DoorRun,
  translator: FrameTranslator,
  identity: Identity,
  item: ReplayItem,
  at: Cursor,
  bounds: SegmentBounds
): ServedStep<AgUiEvent> | Promise<ServedStep<AgUiEvent>> {
  if (item.t !== 'end') {
    const events = translator.push(item as StreamFrame, at, 'superseded' in item)
    return { events, ends: translator.terminal === 'failed' }
  }
  if (bounds.parkedAt === undefined || at.seq >= bounds.end!) {
    return closingEvents(deps, run, translator, identity).then((events) => ({ events, ends: true }))
  }
  return { events: translator.endSegment(), ends: translator.terminal === 'failed' }
}

/**
 * A frame's events from the `skip`-th on, with their SSE ids: the frame's cursor on its last
 * event, `"<seq>:<k>"` on the others (`position.ts`).
 */
export function framed(events: AgUiEvent[], seq: number, cursor: string, skip = 0): SseItem[] {
  const out: SseItem[] = []
  for (let i = skip; i < events.length; i++) {
    out.push({ event: events[i], id: i === events.length - 1 ? cursor : withinFrameId(seq, i + 1) })
  }
  return out
}

import type { AgUiDoor } from '../../agui/door/index.js'
import type { Cursor } from '../../core/cursor.js'
import type { ProjectionRules } from '../../core/projection.js'
import type { UiMessageDoor } from '../../ui_message/door/index.js'
import type { DurableSource } from '../source.js'
import { aguiSource } from './agui.js'
import { framesSource } from './frames.js'
import type { RunCore } from './run_state.js'
import { activeSegment, uiSegmentSource } from './segment.js'
import { threadSource } from './thread.js'
import { uiMessageSource } from './ui_message.js'

/**
 * Every run's and every thread's stream as a Durable Stream in JSON mode, in three dialects
 * (the path says which): `frames` (the stored frames through the public projection, as the
 * native stream route serves them), `agui` (the AG-UI door's events), `ui-message` (the useChat
 * door's UI message chunks); and one segment of a turn in UI message chunks, the AI SDK
 * transport's stream. Built on the doors (no translation rule here) and read through the one
 * read path (`read/`).
 */
export const DIALECTS = ['frames', 'agui', 'ui-message'] as const
export type Dialect = (typeof DIALECTS)[number]

/** What the dialects are read through: both doors, and the projection's rules (`agui` config). */
export interface DialectDoors {
  agui: AgUiDoor
  uiMessage: UiMessageDoor
  rules: ProjectionRules
}

const coreOf = (doors: DialectDoors): RunCore => ({
  sink: doors.agui.sink,
  parking: doors.agui.parking,
})

/** A run's stream (`streamRunId`: the run that owns the stream) in `dialect`. */
export function runStream(doors: DialectDoors, dialect: Dialect, streamRunId: string) {
  const core = coreOf(doors)
  if (dialect === 'frames') return framesSource(core, streamRunId, doors.rules)
  if (dialect === 'agui') return aguiSource(doors.agui, core, streamRunId)
  return uiMessageSource(doors.uiMessage, core, streamRunId)
}

/** A thread's stream in `dialect`: its turns in order (`thread_offset.ts`). */
export function threadStream(doors: DialectDoors, dialect: Dialect, threadId: string) {
  return threadSource(doors.agui.runs, threadId, (streamRunId) =>
    runStream(doors, dialect, streamRunId)
  )
}

/** One segment of a turn as UI message chunks (`uiSegmentSource`). */
export function segmentStream(
  doors: DialectDoors,
  streamRunId: string,
  from: Cursor,
  after: number
): DurableSource {
  return uiSegmentSource(doors.uiMessage, coreOf(doors), streamRunId, from, after)
}

/** The segment the stream is in now (`activeSegment`). */
export function currentSegment(doors: DialectDoors, streamRunId: string) {
  return activeSegment(coreOf(doors), streamRunId)
}

export { TURN_SPAN, threadCursor, threadPosition, type ThreadPosition } from './thread_offset.js'

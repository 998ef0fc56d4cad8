import type { Cursor } from '../../core/cursor.js'
import type { StreamFrame } from '../../core/frames.js'
import type { FrameTranslator } from '../translate/translator.js'
import type { DoorDeps } from './reply.js'

/**
 * Feed a stream's stored frames up to `until` (inclusive; inside a text row when it has an
 * offset) to the translator, emitting nothing: what re-attach and the transcript rebuild from.
 */
export async function replayInto(
  deps: Pick<DoorDeps, 'sink'>,
  translator: FrameTranslator,
  streamRunId: string,
  until: Cursor
) {
  let seq = 1
  const pageSize = deps.sink.options.pageSize
  while (seq <= until.seq) {
    const rows = await deps.sink.store.rows(
      streamRunId,
      seq,
      Math.min(pageSize, until.seq - seq + 1)
    )
    if (rows.length === 0) return
    for (const row of rows) {
      if (row.kind === 'end') translator.endSegment()
      else if (row.kind === 'text') {
        const v =
          row.seq === until.seq && until.offset !== undefined
            ? row.body.slice(0, until.offset)
            : row.body
        translator.push({ t: 'text', v }, { seq: row.seq, offset: v.length })
      } else if (!row.superseded) {
        translator.push(JSON.parse(row.body) as StreamFrame, { seq: row.seq })
      }
    }
    seq = rows.at(-1)!.seq + 1
  }
}

/** The whole stream, replayed silently (as far as it is stored). */
export const WHOLE: Cursor = { seq: Number.MAX_SAFE_INTEGER }

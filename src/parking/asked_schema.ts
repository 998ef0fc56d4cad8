import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { positionOf } from '../sink/read_path.js'
import type { ItemRow } from './store_rows.js'

/**
 * The JSON Schema of the tool's input the `approval` frame that asked for `item` declares
 * (`inputSchema`, `src/core/frames.ts`), read from the frame's own row of the stream; `undefined`
 * when it declares none (or the row is gone).
 */
export async function askedInputSchema(
  sink: Pick<LucidTokenStreamSink, 'replay'>,
  item: Pick<ItemRow, 'streamRunId' | 'streamSeq' | 'runId' | 'itemId'>
): Promise<unknown> {
  const seq = item.streamSeq
  for await (const row of sink.replay(item.streamRunId, {
    after: { seq: seq - 1 },
    until: { seq },
  })) {
    if (positionOf(row).seq !== seq) return undefined
    if (row.t !== 'approval' || row.id !== item.itemId || row.runId !== item.runId) return undefined
    return row.inputSchema
  }
  return undefined
}

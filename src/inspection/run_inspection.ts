import type { StoredRow } from '../store/rows.js'
import type { LucidTokenStreamSink } from '../sink/lucid_sink.js'
import type { Parking } from '../parking/parking.js'
import type { ParkedItem } from '../parking/types.js'

/** The stream's row as `LucidTokenStreamSink.head` reads it (times in epoch milliseconds). */
export type InspectedHead = NonNullable<Awaited<ReturnType<LucidTokenStreamSink['head']>>>

/**
 * A run's inspection: what `agent-stream:inspect` prints and the admin run view draws. Its stream's
 * head, every stored row in seq order (raw, as stored, each with its time), and every item it
 * parked on (pending and decided, its sub-agents' included), oldest first. Server-side only:
 * rows are unprojected (a view that shows them to a person passes frames through the public
 * projection).
 */
export interface RunInspection {
  head: InspectedHead
  rows: StoredRow[]
  parked: ParkedItem[]
}

/** Items per parking read. */
const PARKED_PAGE = 100

/**
 * Gather a run's inspection (see {@link RunInspection}): the head, the rows up to the head's last seq
 * through the sink's stored-rows read, the parked items through parking's queries (`list`).
 *
 * @returns `null` when the run has no stream (never opened, or purged)
 * @throws InvalidRunIdError for an id outside the run id grammar
 */
export async function inspectRun(
  sink: LucidTokenStreamSink,
  parking: Parking,
  runId: string
): Promise<RunInspection | null> {
  const head = await sink.head(runId)
  if (!head) return null
  const rows: StoredRow[] = []
  for await (const page of sink.storedRows(runId, { toSeq: head.lastSeq })) rows.push(...page)
  // By item: one decided between the two listings is in both, and its decided row is the newer.
  const byItem = new Map<string, ParkedItem>()
  for (const status of ['pending', 'decided'] as const) {
    for (let page = 1; ; page++) {
      const items = await parking.queries.list({
        streamRunId: runId,
        status,
        page,
        perPage: PARKED_PAGE,
      })
      for (const item of items)
        byItem.set(`${item.runId}\u0000${item.park}\u0000${item.itemId}`, item)
      if (items.length < PARKED_PAGE) break
    }
  }
  // The listing is newest first per status: the inspection reads in stream order.
  const parked = [...byItem.values()]
  parked.sort((a, b) => a.streamSeq - b.streamSeq || (a.runId < b.runId ? -1 : 1))
  return { head, rows, parked }
}

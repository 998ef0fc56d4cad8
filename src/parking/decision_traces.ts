import { TraceContexts } from '../store/trace_contexts.js'
import { recordDecidedItems, tracing, type DecidedItem } from '../telemetry/traces/index.js'
import type { ItemKind, ParkingTables } from './store_rows.js'

/** An item a decision (or expiry, or cancel) settled: which row. */
export interface SettledKey {
  kind: ItemKind
  runId: string
  park: number
  itemId: string
}

/**
 * The `await_human` spans of items just settled (docs/observability.md): each made now, from its
 * stored row, with the ask's time as its start and the decision's as its end (both the database's
 * clock), a child of the run's stored root context. Nothing is read past the run's carrier when
 * the run has none (no tracer recorded its start). `keys`: the items; `'cancelled'`: every item
 * of the stream a cancel settled. A failure here is told to `onError`, never thrown: it never
 * undoes a decision.
 */
export async function traceSettled(
  rows: ParkingTables,
  streamRunId: string,
  keys: SettledKey[] | 'cancelled',
  onError?: (error: unknown) => void
) {
  try {
    await record(rows, streamRunId, keys)
  } catch (error) {
    onError?.(error)
  }
}

async function record(rows: ParkingTables, streamRunId: string, keys: SettledKey[] | 'cancelled') {
  // No SDK: no span is made, so nothing is read for one.
  if (!tracing()) return
  const carrier = await new TraceContexts(() => rows.client, rows.tables).carrier(streamRunId)
  if (!carrier) return
  const found: DecidedItem[] = []
  for (const kind of ['approval', 'elicitation'] as const) {
    const query = rows.client.from(rows.items(kind)).where('stream_run_id', streamRunId)
    const wanted = keys === 'cancelled' ? null : keys.filter((key) => key.kind === kind)
    if (wanted?.length === 0) continue
    if (wanted) {
      query.where((q) => {
        for (const key of wanted) {
          q.orWhere((one) =>
            one.where('run_id', key.runId).where('park', key.park).where('item_id', key.itemId)
          )
        }
      })
    } else {
      query.where('status', 'cancelled').where('decided_via', 'cancel')
    }
    for (const row of await query) {
      if (row.decided_at === null || row.decided_at === undefined) continue
      found.push({
        kind,
        runId: row.run_id,
        streamRunId,
        threadId: row.thread_id,
        park: Number(row.park),
        itemId: row.item_id,
        ...(kind === 'approval' ? { toolName: row.tool_name } : {}),
        approver: row.approver,
        decision: row.status,
        via: row.decided_via ?? 'api',
        askedAt: Number(row.created_at),
        decidedAt: Number(row.decided_at),
      })
    }
  }
  recordDecidedItems(carrier, found)
}

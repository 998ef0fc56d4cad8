import { sinkInternals, type LucidTokenStreamSink } from '../sink/lucid_sink.js'
import { WebhookDeliveries, type DeliveryRow } from '../store/webhook_deliveries.js'

/** One webhook delivery of a run, as `agent-stream:inspect` shows it (no payload, no path). */
export interface InspectedDelivery {
  id: string
  event: string
  /** The endpoint's host (its path or query may carry a token: never shown). */
  endpointHost: string
  status: DeliveryRow['status']
  attempts: number
  lastError: string | null
  createdAt: number
  nextAttemptAt: number | null
  deliveredAt: number | null
}

function hostOf(url: string) {
  try {
    return new URL(url).host
  } catch {
    return '(invalid)'
  }
}

/**
 * The webhook deliveries of a run's stream (every event of it and its sub-agents, every
 * endpoint), oldest first: their state (`pending`, `delivered`, `dead`), attempts and last
 * failure's code. Empty when the outbox table does not exist (migration 0013 not run).
 */
export async function runDeliveries(
  sink: LucidTokenStreamSink,
  streamRunId: string
): Promise<InspectedDelivery[]> {
  const client = sinkInternals(sink).client
  if (!(await client.schema.hasTable(sink.tables.webhookDeliveries))) return []
  const rows = await new WebhookDeliveries(() => client, sink.tables).forStream(streamRunId)
  return rows.map((row) => ({
    id: row.id,
    event: row.eventType,
    endpointHost: hostOf(row.endpoint),
    status: row.status,
    attempts: row.attempts,
    lastError: row.lastError,
    createdAt: row.createdAt,
    nextAttemptAt: row.status === 'pending' ? row.nextAttemptAt : null,
    deliveredAt: row.deliveredAt,
  }))
}

import { randomUUID } from 'node:crypto'
import type { TransactionClientContract } from '@adonisjs/lucid/types/database'
import type { LifecycleEvent, LifecycleRecorder } from '../../core/lifecycle.js'
import type { TableNames } from '../../store/schema.js'
import { nowMs } from '../../store/sql.js'
import { insertDeliveries, parkItems, streamThread } from '../../store/webhook_deliveries.js'
import type { ResolvedWebhooks } from './config.js'

/** A new `webhook-id`: `msg_` and 32 hex digits (unique per event and endpoint). */
export function newWebhookId() {
  return `msg_${randomUUID().replaceAll('-', '')}`
}

/**
 * The body of a lifecycle event, as every endpoint receives it (Standard Webhooks' shape:
 * `type`, `timestamp`, `data`). Only ids, statuses and the park's routing facts: never frame
 * text, tool input, a question, a principal beyond its id, or a checkpoint.
 */
export function webhookPayload(
  event: LifecycleEvent,
  at: number,
  config: Pick<ResolvedWebhooks, 'agent' | 'consolePath'>,
  threadId: string | null
) {
  const { data } = event
  const items = data.items?.map((item) => ({
    itemId: item.itemId,
    kind: item.kind,
    ...(item.toolName !== undefined ? { toolName: item.toolName } : {}),
    approver: item.approver,
    expiresAt:
      item.expiresAt === null || item.expiresAt === undefined
        ? null
        : new Date(item.expiresAt).toISOString(),
    // Where the person who must decide opens it (the admin console's item page).
    consolePath:
      `${config.consolePath}/items/${encodeURIComponent(data.runId)}/` +
      `${encodeURIComponent(item.itemId)}${data.park === undefined ? '' : `?park=${data.park}`}`,
  }))
  return {
    type: event.type,
    timestamp: new Date(at).toISOString(),
    data: {
      runId: data.runId,
      streamRunId: data.streamRunId,
      threadId,
      agent: config.agent,
      ...(data.status !== undefined ? { status: data.status } : {}),
      ...(data.code !== undefined ? { code: data.code } : {}),
      ...(data.park !== undefined ? { park: data.park } : {}),
      ...(items ? { items } : {}),
      ...(data.decision !== undefined ? { decision: data.decision } : {}),
      ...(data.via !== undefined ? { via: data.via } : {}),
      ...(data.decidedBy !== undefined ? { decidedBy: data.decidedBy } : {}),
    },
  }
}

/**
 * The outbox (a {@link LifecycleRecorder}): each event becomes one row per endpoint that wants
 * it, written in the caller's transaction, so the event exists exactly when the change it
 * reports committed. Once that transaction commits, `committed` wakes the deliverer.
 */
export class WebhookOutbox implements LifecycleRecorder {
  readonly enabled = true

  constructor(
    readonly config: ResolvedWebhooks,
    readonly tables: TableNames,
    /** Told once the transaction committed, with the endpoints it wrote rows for. */
    readonly committed: (endpoints: string[]) => void
  ) {}

  async record(trx: TransactionClientContract, event: LifecycleEvent) {
    const endpoints = this.config.endpoints.filter(
      (endpoint) => !endpoint.events || endpoint.events.includes(event.type)
    )
    if (endpoints.length === 0) return
    const threadId =
      event.data.threadId ?? (await streamThread(trx, this.tables, event.data.streamRunId))
    // A park's items are read here, in the park's transaction (the producer names the park).
    if (event.type === 'run.parked' && !event.data.items && event.data.park !== undefined) {
      const { runId, streamRunId, park } = event.data
      const items = await parkItems(trx, this.tables, streamRunId, [{ runId, park }])
      event = { ...event, data: { ...event.data, items } }
    }
    const payload = JSON.stringify(webhookPayload(event, nowMs(), this.config, threadId))
    await insertDeliveries(
      trx,
      this.tables,
      endpoints.map((endpoint) => ({
        id: newWebhookId(),
        eventType: event.type,
        endpoint: endpoint.url,
        streamRunId: event.data.streamRunId,
        runId: event.data.runId,
        payload,
      }))
    )
    // A hint only (the deliverer's timer finds the rows anyway).
    const urls = endpoints.map((endpoint) => endpoint.url)
    trx.after('commit', () => this.committed(urls))
  }
}

import type { QueryClientContract } from '@adonisjs/lucid/types/database'
import type { TableNames } from '../../store/schema.js'
import { WebhookDeliveries } from '../../store/webhook_deliveries.js'
import { resolveWebhooks, type ResolvedWebhooks, type WebhooksOptions } from './config.js'
import { WebhookDeliverer } from './deliverer.js'
import { WebhookOutbox } from './outbox.js'

export { resolveWebhooks, type ResolvedWebhooks, type WebhooksOptions } from './config.js'
export type { WebhookEndpoint } from './config.js'
export { WebhookDeliverer, backoffDelay, failureCode } from './deliverer.js'
export { WebhookOutbox, webhookPayload, newWebhookId } from './outbox.js'
export { signedHeaders } from './signing.js'

/** A runtime's webhooks: the outbox it records into, the deliverer, the rows. */
export interface Webhooks {
  config: ResolvedWebhooks
  /** The lifecycle recorder the sink, the driver and parking write events through. */
  outbox: WebhookOutbox
  /** Delivers the rows; `start()` it on the replicas that deliver (the provider does on ready). */
  deliverer: WebhookDeliverer
  /** The outbox's rows (dead letters, a run's deliveries, a retry). */
  deliveries: WebhookDeliveries
}

/**
 * The webhooks of a runtime, or `null` when the options name no endpoint (off).
 * @throws InvalidWebhookConfigError (see {@link resolveWebhooks})
 */
export function createWebhooks(
  options: WebhooksOptions | undefined,
  tables: TableNames,
  client: () => QueryClientContract,
  deliverer: { holder?: string; onError?: (error: unknown) => void } = {},
  /** The agent's name in every payload (`agentNameOf`). */
  agent?: string
): Webhooks | null {
  const config = resolveWebhooks(options, agent)
  if (!config) return null
  const deliveries = new WebhookDeliveries(client, tables)
  const running = new WebhookDeliverer(deliveries, config, deliverer)
  const outbox = new WebhookOutbox(config, tables, (endpoints) => running.wake(endpoints))
  return { config, outbox, deliverer: running, deliveries }
}

import { LIFECYCLE_EVENTS } from '../../core/lifecycle.js'
import { instruments } from './instruments.js'
import { ATTRIBUTE, oneOf } from './names.js'

/** How one delivery attempt ended: a 2xx, a failure retried later, or the failure that made it dead. */
export type WebhookAttemptResult = 'delivered' | 'failed' | 'dead'

/**
 * One webhook attempt of an event of type `event` ended with `result`
 * (`agent_stream.webhook.attempts`); a delivered one also records the time from its event's
 * commit (`createdAt`, database time, epoch ms) to its delivery at `at`
 * (`agent_stream.webhook.delivery.delay`).
 */
export function recordWebhookAttempt(
  event: string,
  result: WebhookAttemptResult,
  createdAt: number,
  at: number
) {
  const made = instruments()
  if (!made) return
  const type = oneOf(event, LIFECYCLE_EVENTS)
  made.webhookAttempts.add(1, { [ATTRIBUTE.webhookEvent]: type, [ATTRIBUTE.webhookResult]: result })
  if (result === 'delivered') {
    made.webhookDelay.record(Math.max(0, at - createdAt) / 1000, {
      [ATTRIBUTE.webhookEvent]: type,
    })
  }
}

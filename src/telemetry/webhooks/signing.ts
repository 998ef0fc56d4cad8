import { createHmac } from 'node:crypto'

/**
 * The Standard Webhooks headers of one attempt (standardwebhooks.com): `webhook-id` (the
 * idempotency key, the same on every attempt), `webhook-timestamp` (the attempt's Unix time in
 * seconds) and `webhook-signature`, `v1,` and the base64 HMAC-SHA256, keyed with the secret's
 * base64 key, of `<id>.<timestamp>.<body>` (one per key, space-separated, while a secret rotates). What `new Webhook(secret).verify(body, headers)`
 * of the reference library checks.
 */
export function signedHeaders(
  keys: Buffer[],
  id: string,
  body: string,
  seconds: number
): Record<string, string> {
  const signed = `${id}.${seconds}.${body}`
  const signatures = keys.map(
    (key) => `v1,${createHmac('sha256', key).update(signed).digest('base64')}`
  )
  return {
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    // One per key, space-separated: a receiver accepts the request when any one verifies.
    'webhook-signature': signatures.join(' '),
  }
}

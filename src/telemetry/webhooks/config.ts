import { InvalidWebhookConfigError } from '../../errors.js'
import { LIFECYCLE_EVENTS, type LifecycleEventType } from '../../core/lifecycle.js'

/** One receiver of lifecycle events. */
export interface WebhookEndpoint {
  /** Where events are POSTed: an `http://` or `https://` URL, no credentials in it. */
  url: string
  /**
   * The Standard Webhooks signing secret: `whsec_` and the base64 of the key (24 to 64 bytes,
   * as the receiver's `new Webhook(secret)` takes it). Several, to rotate it: every attempt is
   * signed with each (one `v1,` signature per secret), so a receiver with the old or the new
   * one accepts it while it moves on.
   */
  secret: string | string[]
  /** The events this endpoint wants (default: every one). */
  events?: LifecycleEventType[]
}

/** `webhooks` in `createRuntime`'s options (durations in milliseconds). */
export interface WebhooksOptions {
  /** The receivers; none: webhooks are off (no row is written, no deliverer runs). */
  endpoints: WebhookEndpoint[]
  /** Attempts before a delivery is `dead` (the dead letter). Default 8. */
  maxAttempts?: number
  /** One attempt's timeout. Default 10000. */
  timeoutMs?: number
  /** The first retry's delay; each next one doubles (with jitter). Default 5000. */
  backoffMs?: number
  /** The longest delay between two attempts. Default 3600000 (1 h). */
  maxBackoffMs?: number
  /** How often each replica looks for due deliveries (besides after every commit). Default 2000. */
  pollIntervalMs?: number
  /** Delivered rows are deleted after this long (or with their run). Default 604800000 (7 d). */
  retentionMs?: number
  /** The admin console's mount, for the `consolePath` of `run.parked` (default `/agent-stream/admin`). */
  consolePath?: string
}

/** {@link WebhooksOptions} checked, every default applied. */
export interface ResolvedWebhooks {
  endpoints: (WebhookEndpoint & { keys: Buffer[]; host: string })[]
  maxAttempts: number
  timeoutMs: number
  backoffMs: number
  maxBackoffMs: number
  pollIntervalMs: number
  retentionMs: number
  /** The agent's name every payload carries (`agentNameOf`: `telemetry.agentName` or the runner's). */
  agent: string
  consolePath: string
}

const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/

/**
 * How a field is named in the error: `config/agent_stream.ts` names the durations without their
 * `Ms` (`maxBackoff: '5s'`), `createRuntime` with it (`maxBackoffMs: 5000`).
 */
export type WebhookFieldNames = Partial<Record<keyof WebhooksOptions, string>>

function positive(
  field: string,
  value: number | undefined,
  fallback: number,
  min: number,
  duration: boolean
) {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < min) {
    throw new InvalidWebhookConfigError(
      field,
      duration ? `must be a duration of at least ${min} ms` : `must be an integer >= ${min}`
    )
  }
  return value
}

/**
 * Check the webhook options (at boot: `defineConfig` and `createRuntime` both call it) and apply
 * the defaults; `null` when there is no endpoint (webhooks off).
 * @throws InvalidWebhookConfigError naming the field and the rule, never the value
 */
export function resolveWebhooks(
  options: WebhooksOptions | undefined,
  agent = 'agent',
  /** The fields' names as the caller's config spells them (`defineConfig`'s durations). */
  names: WebhookFieldNames = {}
): ResolvedWebhooks | null {
  const name = (field: keyof WebhooksOptions) => names[field] ?? field
  if (options === undefined) return null
  if (!Array.isArray(options.endpoints)) {
    throw new InvalidWebhookConfigError('endpoints', 'must be an array')
  }
  const endpoints = options.endpoints.map((endpoint, index) => {
    const at = `endpoints.${index}`
    let url: URL
    try {
      url = new URL(endpoint.url)
    } catch {
      throw new InvalidWebhookConfigError(`${at}.url`, 'must be an absolute URL')
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new InvalidWebhookConfigError(`${at}.url`, 'must be an http:// or https:// URL')
    }
    if (url.username || url.password) {
      throw new InvalidWebhookConfigError(`${at}.url`, 'must not carry credentials')
    }
    const secrets = Array.isArray(endpoint.secret) ? endpoint.secret : [endpoint.secret]
    if (secrets.length === 0) {
      throw new InvalidWebhookConfigError(`${at}.secret`, 'must name at least one secret')
    }
    const keys = secrets.map((secret, i) => {
      const field = Array.isArray(endpoint.secret) ? `${at}.secret.${i}` : `${at}.secret`
      if (typeof secret !== 'string' || !SECRET.test(secret)) {
        throw new InvalidWebhookConfigError(field, 'must be "whsec_" and base64')
      }
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
      if (key.length < 24 || key.length > 64) {
        throw new InvalidWebhookConfigError(field, 'must hold a key of 24 to 64 bytes')
      }
      return key
    })
    if (endpoint.events !== undefined) {
      if (!Array.isArray(endpoint.events) || endpoint.events.length === 0) {
        throw new InvalidWebhookConfigError(`${at}.events`, 'must be a non-empty array')
      }
      endpoint.events.forEach((event, i) => {
        if (!LIFECYCLE_EVENTS.includes(event)) {
          throw new InvalidWebhookConfigError(
            `${at}.events.${i}`,
            `must be one of ${LIFECYCLE_EVENTS.join(', ')}`
          )
        }
      })
    }
    return { ...endpoint, keys, host: url.host }
  })
  if (new Set(endpoints.map((e) => e.url)).size !== endpoints.length) {
    throw new InvalidWebhookConfigError('endpoints', 'must not name one URL twice')
  }
  if (endpoints.length === 0) return null
  const backoffMs = positive(name('backoffMs'), options.backoffMs, 5000, 1, true)
  return {
    endpoints,
    maxAttempts: positive(name('maxAttempts'), options.maxAttempts, 8, 1, false),
    timeoutMs: positive(name('timeoutMs'), options.timeoutMs, 10_000, 1, true),
    backoffMs,
    maxBackoffMs: positive(name('maxBackoffMs'), options.maxBackoffMs, 3_600_000, backoffMs, true),
    pollIntervalMs: positive(name('pollIntervalMs'), options.pollIntervalMs, 2000, 10, true),
    retentionMs: positive(name('retentionMs'), options.retentionMs, 604_800_000, 0, true),
    agent,
    consolePath: options.consolePath ?? '/agent-stream/admin',
  }
}

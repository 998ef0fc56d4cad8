import { createHash } from 'node:crypto'
import vine from '@vinejs/vine'
import { canonicalJson } from '../../core/canonical_json.js'
import { describeIssues, issuesOf } from '../../errors.js'
import { LINK_PATH_MAX } from '../../store/ds_subscriptions_schema.js'

/** A stream-root-relative stream path as subscriptions name it (`events/abc`). */
const streamPath = (max = 1024) =>
  vine
    .string()
    .minLength(1)
    .maxLength(max)
    .regex(/^[^/].*[^/]$|^[^/]$/)

const validator = vine.compile(
  vine.object({
    type: vine.enum(['webhook', 'pull-wake'] as const),
    pattern: streamPath().optional(),
    streams: vine.array(streamPath(LINK_PATH_MAX)).maxLength(1000).optional(),
    webhook: vine.object({ url: vine.string().maxLength(2048) }).optional(),
    wake_stream: streamPath().optional(),
    lease_ttl_ms: vine.number().withoutDecimals().min(1000).max(600_000).optional(),
    description: vine.string().maxLength(1024).optional(),
  })
)

/** A subscription's configuration, normalized (PROTOCOL.md 6.2). */
export interface SubscriptionConfig {
  type: 'webhook' | 'pull-wake'
  pattern: string | null
  /** Explicit streams, sorted, each once. */
  streams: string[]
  webhookUrl: string | null
  wakeStream: string | null
  leaseTtlMs: number
  description: string | null
  /**
   * `{stream-url}` as the request that created the subscription named it: where its webhook
   * calls back, whichever replica delivers (stored with it, not part of its hash).
   */
  root?: string
}

/** The lease of a subscription that names none: 30 seconds. */
export const DEFAULT_LEASE_TTL_MS = 30_000

/**
 * A `PUT .../__ds/subscriptions/:id` body, validated and normalized, or the rule it breaks (a
 * sentence naming the field, never its value).
 */
export async function subscriptionConfig(
  body: unknown
): Promise<{ config: SubscriptionConfig } | { invalid: string }> {
  let input: Awaited<ReturnType<typeof validator.validate>>
  try {
    input = await validator.validate(body)
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    return { invalid: describeIssues('Invalid subscription', issues.slice(0, 1)) }
  }
  if (input.pattern === undefined && (input.streams ?? []).length === 0) {
    return { invalid: 'Invalid subscription: name a pattern or streams.' }
  }
  if (input.type === 'webhook' && !input.webhook) {
    return { invalid: 'Invalid subscription: a webhook subscription needs webhook.url.' }
  }
  if (input.type === 'pull-wake' && !input.wake_stream) {
    return { invalid: 'Invalid subscription: a pull-wake subscription needs wake_stream.' }
  }
  return {
    config: {
      type: input.type,
      pattern: input.pattern ?? null,
      streams: [...new Set(input.streams ?? [])].sort(),
      webhookUrl: input.type === 'webhook' ? (input.webhook?.url ?? null) : null,
      wakeStream: input.type === 'pull-wake' ? (input.wake_stream ?? null) : null,
      leaseTtlMs: input.lease_ttl_ms ?? DEFAULT_LEASE_TTL_MS,
      description: input.description ?? null,
    },
  }
}

/** The hash two configurations are compared by (an identical `PUT` re-confirms: 200). */
export function configHash(config: SubscriptionConfig): string {
  return createHash('sha256').update(canonicalJson(config)).digest('hex')
}

import { randomUUID } from 'node:crypto'
import { context, ROOT_CONTEXT } from '@opentelemetry/api'
import type { DeliveryRow, WebhookDeliveries } from '../../store/webhook_deliveries.js'
import { nowMs } from '../../store/sql.js'
import { recordWebhookAttempt } from '../metrics/index.js'
import type { ResolvedWebhooks } from './config.js'
import { signedHeaders } from './signing.js'

/** Rows one round claims at most (each delivered concurrently). */
const ROUND_ROWS = 16

/** How often delivered rows past their retention are deleted. */
const RETENTION_SWEEP_MS = 60_000

/** Delivered rows one retention statement deletes at most. */
const RETENTION_BATCH = 500

/**
 * The delay before attempt `attempts + 1`: exponential (`backoffMs` doubled per attempt made),
 * capped at `maxBackoffMs`, with equal jitter (half fixed, half random) so retries of many rows
 * spread out.
 */
export function backoffDelay(
  config: Pick<ResolvedWebhooks, 'backoffMs' | 'maxBackoffMs'>,
  attempts: number,
  random: () => number = Math.random
) {
  const exp = Math.min(config.maxBackoffMs, config.backoffMs * 2 ** Math.max(0, attempts - 1))
  return Math.round(exp / 2 + (random() * exp) / 2)
}

/** The stable code of a failed attempt (never the receiver's body or an error's text). */
export function failureCode(error: unknown): string {
  const name = (error as { name?: string } | null)?.name
  if (name === 'TimeoutError') return 'timeout'
  if (name === 'AbortError') return 'replica_shutdown'
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause
  const code = typeof cause?.code === 'string' ? cause.code : null
  if (code === 'ECONNREFUSED') return 'connection_refused'
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection_reset'
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_failure'
  if (code && /^[A-Z_]{2,40}$/.test(code)) return code.toLowerCase()
  return 'network_error'
}

/** What a deliverer is made with. */
export interface DelivererOptions {
  /** This replica's name on the leases it takes (default: a random id). */
  holder?: string
  /** A round's failures (the next round tries again). */
  onError?: (error: unknown) => void
}

/**
 * Delivers the outbox's rows, on any replica: woken after a commit that wrote some
 * (`wake`) and by a timer (`pollIntervalMs`). Each due row is claimed by compare-and-set on its
 * lease (one replica at a time), POSTed with the Standard Webhooks headers and a timeout; a 2xx
 * is `delivered`, anything else (a status, a timeout, a refused connection) is retried with
 * backoff until `maxAttempts`, then the row is `dead` with the last failure's code. A replica
 * killed mid-attempt leaves its lease to lapse: another replica tries again (at least once; the
 * `webhook-id` lets a receiver drop a repeat).
 */
export class WebhookDeliverer {
  readonly holder: string
  #timer: NodeJS.Timeout | null = null
  #round: Promise<void> | null = null
  #again = false
  #stopped = true
  #abort = new AbortController()
  #lastRetentionSweep = 0

  constructor(
    readonly rows: WebhookDeliveries,
    readonly config: ResolvedWebhooks,
    readonly options: DelivererOptions = {}
  ) {
    this.holder = options.holder ?? `replica-${randomUUID()}`
  }

  /** Whether this deliverer runs (started, not stopped). */
  get running() {
    return !this.#stopped
  }

  /** Start the timer (and a first round at once). Idempotent. */
  start() {
    if (!this.#stopped) return
    this.#stopped = false
    this.#abort = new AbortController()
    this.#schedule(0)
  }

  /** Look for due rows now (after a commit that wrote some); coalesced with a round running. */
  wake() {
    if (this.#stopped) return
    if (this.#round) {
      this.#again = true
      return
    }
    this.#schedule(0)
  }

  /** Stop: no new round; attempts in flight are aborted (retried elsewhere) and awaited. */
  async stop() {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#abort.abort()
    await this.#round
  }

  /** One round: claim and deliver what is due until nothing is. Resolves when done. */
  async runOnce(): Promise<void> {
    while (true) {
      const ids = await this.rows.due(ROUND_ROWS)
      const claimed: DeliveryRow[] = []
      for (const id of ids) {
        const row = await this.rows.claim(id, this.holder, this.#leaseMs)
        if (row) claimed.push(row)
      }
      await Promise.all(claimed.map((row) => this.#attempt(row)))
      if (ids.length < ROUND_ROWS || this.#stopped) break
    }
    const now = nowMs()
    const stopping = () => this.#abort.signal.aborted
    if (!stopping() && now - this.#lastRetentionSweep >= RETENTION_SWEEP_MS) {
      this.#lastRetentionSweep = now
      // Batches of a bounded size, until none is left (an outbox writing more than one batch a
      // sweep, 500 a minute, must not grow without end), or the replica stops.
      const before = now - this.config.retentionMs
      while (!stopping()) {
        if ((await this.rows.purgeDelivered(before, RETENTION_BATCH)) < RETENTION_BATCH) break
      }
    }
  }

  /** An attempt may take its timeout; the lease outlasts it with a margin. */
  get #leaseMs() {
    return this.config.timeoutMs * 2 + 5000
  }

  #schedule(delayMs: number) {
    if (this.#stopped) return
    if (this.#timer) clearTimeout(this.#timer)
    // A round serves every run's rows: it runs in no request's or run's trace context (a wake
    // comes from a commit inside one; its timer would carry that context on).
    this.#timer = setTimeout(
      () =>
        context.with(ROOT_CONTEXT, () => {
          this.#timer = null
          this.#round = this.runOnce()
            .catch((error) => this.options.onError?.(error))
            .finally(() => {
              this.#round = null
              const again = this.#again
              this.#again = false
              this.#schedule(again ? 0 : this.config.pollIntervalMs)
            })
        }),
      delayMs
    )
    this.#timer.unref?.()
  }

  async #attempt(row: DeliveryRow) {
    const endpoint = this.config.endpoints.find((candidate) => candidate.url === row.endpoint)
    let error: string | null = null
    if (!endpoint) {
      // Not in this replica's config: removed since, or added on replicas deployed after this
      // one (a rolling deploy). A failed attempt like any other, so a replica that knows the
      // endpoint delivers it on a retry; dead after `maxAttempts` when none does.
      error = 'endpoint_removed'
    } else {
      error = await this.#post(endpoint, row)
    }
    if (error === null) {
      await this.rows.delivered(row.id, this.holder)
      recordWebhookAttempt(row.eventType, 'delivered', row.createdAt, nowMs())
      return
    }
    if (error === 'replica_shutdown') {
      // Not the receiver's fault: due again at once, for another replica.
      await this.rows.failed(row.id, this.holder, error, 0)
      return
    }
    const dead = row.attempts >= this.config.maxAttempts
    await this.rows.failed(
      row.id,
      this.holder,
      error,
      dead ? null : backoffDelay(this.config, row.attempts)
    )
    recordWebhookAttempt(row.eventType, dead ? 'dead' : 'failed', row.createdAt, nowMs())
  }

  /** POST `row` to `endpoint`: `null` on a 2xx, else the failure's stable code. */
  async #post(endpoint: ResolvedWebhooks['endpoints'][number], row: DeliveryRow) {
    let error: string | null = null
    try {
      const seconds = Math.floor(nowMs() / 1000)
      const response = await fetch(endpoint.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'adonis-agent-stream-webhooks',
          ...signedHeaders(endpoint.keys, row.id, row.payload, seconds),
        },
        body: row.payload,
        redirect: 'manual',
        signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.config.timeoutMs)]),
      })
      // The receiver's body is never read nor stored.
      await response.body?.cancel().catch(() => {})
      if (response.status < 200 || response.status > 299) error = `http_${response.status}`
    } catch (thrown) {
      error = failureCode(thrown)
    }
    return error
  }
}

import { randomUUID } from 'node:crypto'
import type { DeliveryRow, DueLane, WebhookDeliveries } from '../../store/webhook_deliveries.js'
import { nowMs } from '../../store/sql.js'
import { recordWebhookAttempt } from '../metrics/index.js'
import type { ResolvedWebhooks } from './config.js'
import { Lane } from './lane.js'
import { signedHeaders } from './signing.js'

/** Rows one lane's batch claims at most (each delivered concurrently). */
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
 * `webhook-id` lets a receiver drop a repeat). Each endpoint has a lane of its own (rows of an
 * endpoint this replica's config does not name, one more), so a receiver that hangs until the
 * timeout holds back its own deliveries only.
 */
export class WebhookDeliverer {
  readonly holder: string
  #stopped = true
  #abort = new AbortController()
  #lastRetentionSweep = 0
  /** Each configured endpoint's lane, by URL. */
  readonly #lanes = new Map<string, Lane>()
  /** The lane of rows whose endpoint is in no lane (removed since, or not deployed here yet). */
  readonly #others: Lane

  constructor(
    readonly rows: WebhookDeliveries,
    readonly config: ResolvedWebhooks,
    readonly options: DelivererOptions = {}
  ) {
    this.holder = options.holder ?? `replica-${randomUUID()}`
    const { pollIntervalMs } = config
    for (const { url } of config.endpoints) {
      this.#lanes.set(
        url,
        new Lane(() => this.#deliver({ endpoint: url }), pollIntervalMs, options.onError)
      )
    }
    this.#others = new Lane(() => this.#otherRows(), pollIntervalMs, options.onError)
  }

  /** Whether this deliverer runs (started, not stopped). */
  get running() {
    return !this.#stopped
  }

  /** Start the lanes' timers (and a first round of each at once). Idempotent. */
  start() {
    if (!this.#stopped) return
    this.#stopped = false
    this.#abort = new AbortController()
    for (const lane of this.#allLanes()) lane.start()
  }

  /**
   * Look for due rows now (after a commit that wrote some: `endpoints`, their lanes only; none
   * named: every lane); coalesced with a round running.
   */
  wake(endpoints?: readonly string[]) {
    if (this.#stopped) return
    if (!endpoints) {
      for (const lane of this.#allLanes()) lane.wake()
      return
    }
    for (const url of endpoints) (this.#lanes.get(url) ?? this.#others).wake()
  }

  /** Stop: no new round; attempts in flight are aborted (retried elsewhere) and awaited. */
  async stop() {
    this.#stopped = true
    this.#abort.abort()
    await Promise.all(this.#allLanes().map((lane) => lane.stop()))
  }

  /** One round of every lane: claim and deliver what is due until nothing is. Resolves when done. */
  async runOnce(): Promise<void> {
    await Promise.all([
      ...[...this.#lanes.keys()].map((endpoint) => this.#deliver({ endpoint })),
      this.#otherRows(),
    ])
  }

  #allLanes() {
    return [...this.#lanes.values(), this.#others]
  }

  /** The other lane's round: rows of endpoints this config does not name, then the retention. */
  async #otherRows() {
    await this.#deliver({ except: [...this.#lanes.keys()] })
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

  /** A lane's round: its due rows, a batch at a time, each batch's attempts concurrent. */
  async #deliver(lane: DueLane) {
    while (true) {
      const ids = await this.rows.due(ROUND_ROWS, lane)
      const claimed: DeliveryRow[] = []
      for (const id of ids) {
        const row = await this.rows.claim(id, this.holder, this.#leaseMs)
        if (row) claimed.push(row)
      }
      await Promise.all(claimed.map((row) => this.#attempt(row)))
      if (ids.length < ROUND_ROWS || this.#abort.signal.aborted) break
    }
  }

  /** An attempt may take its timeout; the lease outlasts it with a margin. */
  get #leaseMs() {
    return this.config.timeoutMs * 2 + 5000
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

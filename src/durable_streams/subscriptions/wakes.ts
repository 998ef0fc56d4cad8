import { randomUUID } from 'node:crypto'
import { nowMs } from '../../store/sql.js'
import type {
  DsSubscriptionStore,
  SubscriptionLink,
  SubscriptionRow,
} from '../../store/ds_subscriptions.js'
import type { SubscriptionConfig } from './config.js'
import type { WebhookSigning } from './signing.js'
import { webhookUrlReachable } from './webhook_url.js'
import { webhookAnswer } from './webhook_answer.js'

/**
 * What subscriptions need of the write path's streams (paths are stream-root-relative). A
 * subscription sees only its owner's streams (`owner`: its owner id, `null` anonymous): another's
 * stream is as one that does not exist.
 */
export interface SubscribedStreams {
  /** The tail offset of `owner`'s stream at `path`, or `null` when there is none. */
  tail(path: string, owner: string | null): Promise<string | null>
  /** Every stream of `owner`: its path and tail (a new pattern's backfill). */
  list(owner: string | null): Promise<{ path: string; tail: string }[]>
  /** Append one JSON message to `owner`'s stream at `path` (a wake stream); false when none. */
  append(path: string, message: unknown, owner: string | null): Promise<boolean>
}

/** One linked stream as a wake, a claim or a read shows it. */
export interface StreamView {
  path: string
  link_type: 'explicit' | 'glob'
  acked_offset: string
  tail_offset: string
  has_pending: boolean
}

/** Where this server's reserved URLs are (absolute: they go to other machines). */
export interface ReservedUrls {
  /** `{stream-url}`: the root streams live under, e.g. `https://app.test/agent-stream/ds/v1/stream`. */
  root: string
}

/** A webhook retry's wait after `attempts` failures: 1 s doubling up to 60 s, 20 % jitter. */
export function retryDelayMs(attempts: number): number {
  const base = Math.min(60_000, 1000 * 2 ** Math.max(0, attempts - 1))
  return Math.round(base * (0.8 + Math.random() * 0.4))
}

export const linkType = (link: SubscriptionLink) => (link.explicit ? 'explicit' : 'glob')

/**
 * Wakes (PROTOCOL.md 7): a subscription with pending work (a linked stream whose tail is past
 * its acked offset) and no wake in flight gets a new generation and wake id, by a compare-and-set
 * on its row; then its webhook is called (signed) or a wake event is appended to its wake stream.
 * A webhook answering `{ done: true }` acks the wake's snapshot at once.
 */
export class Wakes {
  constructor(
    readonly store: DsSubscriptionStore,
    readonly streams: SubscribedStreams,
    readonly signing: WebhookSigning,
    readonly send: typeof fetch = fetch,
    readonly localWebhooks = false
  ) {}

  /** The linked streams of subscription `id` (of `owner`) with their tails now. */
  async views(id: string, owner: string | null): Promise<StreamView[]> {
    const links = await this.store.links(id)
    const views: StreamView[] = []
    for (const link of links) {
      const tail = (await this.streams.tail(link.path, owner)) ?? link.ackedOffset
      views.push({
        path: link.path,
        link_type: linkType(link),
        acked_offset: link.ackedOffset,
        tail_offset: tail,
        has_pending: tail > link.ackedOffset,
      })
    }
    return views
  }

  /**
   * Issue a wake of `row` when it has pending work and none in flight (or its lease lapsed).
   * `holder`: a pull-wake claim's worker (the wake is claimed as it is issued). Returns the wake
   * issued, or `null` (nothing pending, one in flight, or another replica issued it).
   */
  async wake(
    row: SubscriptionRow,
    config: SubscriptionConfig,
    urls: ReservedUrls | null,
    holder: string | null = null
  ) {
    const now = nowMs()
    if (row.wakeId !== null && (row.leaseExpiresAt ?? 0) > now) return null
    const views = await this.views(row.id, row.ownerId)
    const pending = views.filter((view) => view.has_pending)
    if (pending.length === 0) return null
    const wake = {
      generation: row.generation + 1,
      wakeId: `w_${randomUUID().replaceAll('-', '')}`,
      wakeStreams: JSON.stringify(views),
      holder: config.type === 'webhook' ? 'webhook' : holder,
      leaseExpiresAt: now + config.leaseTtlMs,
      nextAttemptAt: null,
    }
    const won = await this.store.transition(row.id, row, wake)
    if (!won) return null
    const token = this.signing.token({
      sub: row.id,
      gen: wake.generation,
      wake: wake.wakeId,
      exp: now + Math.max(config.leaseTtlMs, 60_000) * 10,
    })
    const issued = { ...wake, token, views }
    // The subscription's own reserved URLs (its creation's), not the request at hand's.
    const at = config.root ? { root: config.root } : urls
    if (config.type === 'webhook' && at) {
      void this.#deliver(row, config, at, issued).catch(() => {})
    } else if (config.type === 'pull-wake' && holder === null && config.wakeStream) {
      await this.streams.append(
        config.wakeStream,
        {
          type: 'wake',
          subscription_id: row.id,
          stream: pending[0].path,
          generation: wake.generation,
          ts: now,
        },
        row.ownerId
      )
    }
    return issued
  }

  /** Clear a wake (done, released, lapsed); wake again when work is still pending. */
  async finish(
    id: string,
    from: { generation: number; wakeId: string | null },
    urls: ReservedUrls | null,
    failed?: { attempts: number }
  ): Promise<{ finished: boolean; nextWake: boolean }> {
    const cleared = {
      wakeId: null,
      wakeStreams: null,
      holder: null,
      leaseExpiresAt: null,
      ...(failed
        ? {
            status: 'failed' as const,
            attempts: failed.attempts,
            nextAttemptAt: nowMs() + retryDelayMs(failed.attempts),
          }
        : { status: 'active' as const, attempts: 0 }),
    }
    if (!(await this.store.transition(id, from, cleared)))
      return { finished: false, nextWake: false }
    if (failed) return { finished: true, nextWake: false }
    const row = await this.store.find(id)
    if (!row) return { finished: true, nextWake: false }
    const config = JSON.parse(row.config) as SubscriptionConfig
    const next = await this.wake(row, config, urls)
    return { finished: true, nextWake: next !== null }
  }

  /** Acks of a wake: each linked stream's acked offset moved forward to what was processed. */
  async applyAcks(id: string, acks: { stream: string; offset: string }[]) {
    for (const ack of acks) await this.store.ack(id, ack.stream, ack.offset)
  }

  async #deliver(
    row: SubscriptionRow,
    config: SubscriptionConfig,
    urls: ReservedUrls,
    wake: { generation: number; wakeId: string; token: string; views: StreamView[] }
  ) {
    const body = JSON.stringify({
      subscription_id: row.id,
      wake_id: wake.wakeId,
      generation: wake.generation,
      streams: wake.views,
      callback_url: `${urls.root}/__ds/subscriptions/${encodeURIComponent(row.id)}/callback`,
      callback_token: wake.token,
    })
    const from = { generation: wake.generation, wakeId: wake.wakeId }
    let done = false
    try {
      // What the host name resolves to now (it may have changed since the subscription).
      if (!(await webhookUrlReachable(config.webhookUrl!, this.localWebhooks))) {
        throw new Error('webhook URL not reachable')
      }
      const response = await this.send(config.webhookUrl!, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-signature': this.signing.signature(body, Math.floor(Date.now() / 1000)),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      })
      if (!response.ok) {
        // Its body is never read: the connection is let go at once.
        await response.body?.cancel().catch(() => {})
        throw new Error('webhook refused')
      }
      const answer = await webhookAnswer(response)
      done = answer?.done === true
    } catch {
      await this.finish(row.id, from, urls, { attempts: row.attempts + 1 })
      return
    }
    if (!done) return
    await this.applyAcks(
      row.id,
      wake.views.map((view) => ({ stream: view.path, offset: view.tail_offset }))
    )
    await this.finish(row.id, from, urls)
  }
}

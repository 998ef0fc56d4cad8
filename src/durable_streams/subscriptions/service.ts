import type { Principal } from '../../core/run.js'
import { ownerOf } from '../../core/owner.js'
import { nowMs } from '../../store/sql.js'
import { LINK_PATH_MAX } from '../../store/ds_subscriptions_schema.js'
import type { DsSubscriptionStore, SubscriptionRow } from '../../store/ds_subscriptions.js'
import { parseOffset, START_OFFSET } from '../protocol/offset.js'
import { configHash, subscriptionConfig, type SubscriptionConfig } from './config.js'
import { globMatch } from './glob.js'
import type { WebhookSigning } from './signing.js'
import { webhookUrlReachable } from './webhook_url.js'
import { Wakes, linkType, type ReservedUrls, type SubscribedStreams } from './wakes.js'

/** An answer of the subscription APIs: a status and a JSON body (none for 204). */
export interface SubscriptionAnswer {
  status: number
  body?: unknown
}

const error = (status: number, code: string, message: string, more: object = {}) => ({
  status,
  body: { error: { code, message, ...more } },
})
const NOT_FOUND = error(404, 'NOT_FOUND', 'No such subscription.')
const FENCED = error(409, 'FENCED', 'This wake is no longer current.')
const UNAUTHORIZED = error(401, 'UNAUTHORIZED', 'A valid bearer token for this wake is required.')

/** Options of {@link DsSubscriptions}. */
export interface SubscriptionsOptions {
  /** Allow `http://localhost` and `http://127.0.0.x` webhooks (development). Default false. */
  localWebhooks?: boolean
  /** How often lapsed leases and due retries are looked for, in ms. Default 500. */
  sweepMs?: number
  /** The `fetch` webhooks are sent with (tests). */
  fetch?: typeof fetch
}

/**
 * Durable Streams subscriptions (PROTOCOL.md 6-7) on the package's tables: create, re-confirm,
 * read, delete, explicit links, and their delivery: signed webhooks with a callback, or wake
 * events on a wake stream with claim, ack (a heartbeat without `done`) and release, every step
 * fenced by generation and wake id. A lapsed lease is cleared and woken again by any replica's
 * sweep; a failed webhook is retried with backoff (`status: failed` meanwhile).
 */
export class DsSubscriptions {
  readonly wakes: Wakes
  readonly #timer: NodeJS.Timeout | null = null

  constructor(
    readonly store: DsSubscriptionStore,
    readonly streams: SubscribedStreams,
    readonly signing: WebhookSigning,
    readonly options: SubscriptionsOptions = {}
  ) {
    this.wakes = new Wakes(store, streams, signing, options.fetch, !!options.localWebhooks)
    const sweepMs = options.sweepMs ?? 500
    if (sweepMs > 0) {
      this.#timer = setInterval(() => void this.sweep().catch(() => {}), sweepMs)
      this.#timer.unref()
    }
  }

  /** Stop the sweep (the replica shuts down). */
  close() {
    if (this.#timer) clearInterval(this.#timer)
  }

  async put(
    id: string,
    body: unknown,
    principal: Principal | null,
    urls: ReservedUrls
  ): Promise<SubscriptionAnswer> {
    const read = await subscriptionConfig(body)
    if ('invalid' in read) return error(400, 'INVALID_REQUEST', read.invalid)
    const { config } = read
    if (
      config.webhookUrl &&
      !(await webhookUrlReachable(config.webhookUrl, !!this.options.localWebhooks))
    ) {
      return error(400, 'WEBHOOK_URL_REJECTED', 'The webhook URL is not allowed.')
    }
    const hash = configHash(config)
    const existing = await this.store.find(id)
    if (existing) {
      if (existing.configHash !== hash || existing.ownerId !== ownerOf(principal)) {
        return error(409, 'CONFLICT', 'A subscription with this id has another configuration.')
      }
      return { status: 200, body: await this.view(existing, config, urls) }
    }
    const links = []
    for (const path of config.streams) {
      links.push({
        path,
        explicit: true,
        glob: false,
        ackedOffset: await this.#tailOr(path, ownerOf(principal)),
      })
    }
    if (config.pattern) {
      for (const stream of await this.streams.list(ownerOf(principal))) {
        if (!globMatch(config.pattern, stream.path) || !linkable(stream.path)) continue
        const explicit = links.find((link) => link.path === stream.path)
        if (explicit) explicit.glob = true
        else
          links.push({ path: stream.path, explicit: false, glob: true, ackedOffset: stream.tail })
      }
    }
    const row = {
      id,
      // Where its webhook calls back: the reserved URLs this request named (not hashed).
      config: JSON.stringify({ ...config, root: urls.root } satisfies SubscriptionConfig),
      configHash: hash,
      ownerId: ownerOf(principal),
    }
    if (!(await this.store.insert({ ...row, createdAt: nowMs() }, links))) {
      return this.put(id, body, principal, urls)
    }
    const created = (await this.store.find(id))!
    return { status: 201, body: await this.view(created, config, urls) }
  }

  async get(id: string, principal: Principal | null, urls: ReservedUrls) {
    const row = await this.#owned(id, principal)
    if (!row) return NOT_FOUND
    return { status: 200, body: await this.view(row, configOf(row), urls) }
  }

  async delete(id: string, principal: Principal | null): Promise<SubscriptionAnswer> {
    const row = await this.#owned(id, principal)
    if (!row) return NOT_FOUND
    await this.store.remove(id)
    return { status: 204 }
  }

  async addStreams(id: string, body: unknown, principal: Principal | null) {
    const row = await this.#owned(id, principal)
    if (!row) return NOT_FOUND
    const streams = (body as { streams?: unknown } | null)?.streams
    if (!Array.isArray(streams) || !streams.every(isStreamPath) || streams.length > 1000) {
      return error(400, 'INVALID_REQUEST', 'Invalid streams: a list of stream paths.')
    }
    for (const path of streams) {
      await this.store.link(id, path, 'explicit', await this.#tailOr(path, row.ownerId))
    }
    return { status: 204 }
  }

  async removeStream(id: string, path: string, principal: Principal | null) {
    const row = await this.#owned(id, principal)
    if (!row) return NOT_FOUND
    await this.store.unlinkExplicit(id, path)
    return { status: 204 }
  }

  /** A webhook's callback, or a pull-wake worker's ack (`done` releases; without it, a heartbeat). */
  async ack(id: string, token: string | undefined, body: unknown, urls: ReservedUrls) {
    const checked = await this.#fenced(id, token, body)
    if ('status' in checked) return checked
    const { row, config } = checked
    const input = body as { acks?: unknown; done?: unknown }
    const acks = Array.isArray(input.acks) ? input.acks : []
    const valid = acks.every(
      (ack) =>
        typeof ack?.stream === 'string' &&
        typeof ack?.offset === 'string' &&
        parseOffset(ack.offset) !== null &&
        ack.offset !== '-1' &&
        ack.offset !== 'now'
    )
    if (!valid) return error(400, 'INVALID_REQUEST', 'Invalid acks: stream paths and offsets.')
    await this.wakes.applyAcks(id, acks)
    const from = { generation: row.generation, wakeId: row.wakeId }
    if (input.done === true) {
      const finished = await this.wakes.finish(id, from, urls)
      if (!finished.finished) return FENCED
      return { status: 200, body: { ok: true, next_wake: finished.nextWake } }
    }
    const extended = await this.store.transition(id, from, {
      leaseExpiresAt: nowMs() + config.leaseTtlMs,
    })
    return extended ? { status: 200, body: { ok: true, next_wake: false } } : FENCED
  }

  /** A pull-wake worker claims the subscription's wake (one holder at a time). */
  async claim(
    id: string,
    body: unknown,
    principal: Principal | null,
    urls: ReservedUrls
  ): Promise<SubscriptionAnswer> {
    const row = await this.#owned(id, principal)
    if (!row) return NOT_FOUND
    const config = configOf(row)
    const worker = (body as { worker?: unknown } | null)?.worker
    if (typeof worker !== 'string' || worker.length === 0 || worker.length > 191) {
      return error(400, 'INVALID_REQUEST', 'Invalid claim: name the worker.')
    }
    if (config.type !== 'pull-wake') {
      return error(400, 'INVALID_REQUEST', 'Only a pull-wake subscription is claimed.')
    }
    const now = nowMs()
    const live = row.wakeId !== null && (row.leaseExpiresAt ?? 0) > now
    if (live && row.holder !== null) {
      return error(409, 'ALREADY_CLAIMED', 'Another worker holds this subscription.', {
        current_holder: row.holder,
        generation: row.generation,
      })
    }
    let wake: { generation: number; wakeId: string } | null = null
    if (live) {
      const from = { generation: row.generation, wakeId: row.wakeId }
      const claimed = await this.store.transition(id, from, {
        holder: worker,
        leaseExpiresAt: now + config.leaseTtlMs,
      })
      if (!claimed) return this.claim(id, body, principal, urls)
      wake = { generation: row.generation, wakeId: row.wakeId! }
    } else {
      const issued = await this.wakes.wake(row, config, urls, worker)
      if (!issued) {
        const again = await this.store.find(id)
        if (again && again.generation !== row.generation)
          return this.claim(id, body, principal, urls)
        return { status: 204 }
      }
      wake = issued
    }
    const token = this.signing.token({
      sub: id,
      gen: wake.generation,
      wake: wake.wakeId,
      exp: now + Math.max(config.leaseTtlMs, 60_000) * 10,
    })
    return {
      status: 200,
      body: {
        wake_id: wake.wakeId,
        generation: wake.generation,
        token,
        streams: await this.wakes.views(id, row.ownerId),
        lease_ttl_ms: config.leaseTtlMs,
      },
    }
  }

  /** A pull-wake worker lets its claim go without acking; pending work is woken again. */
  async release(id: string, token: string | undefined, body: unknown, urls: ReservedUrls) {
    const checked = await this.#fenced(id, token, body)
    if ('status' in checked) return checked
    const { row } = checked
    const finished = await this.wakes.finish(
      id,
      { generation: row.generation, wakeId: row.wakeId },
      urls
    )
    return finished.finished ? { status: 204 } : FENCED
  }

  /**
   * An append (or a create with data) to the stream at `path`, committed: linked by matching
   * patterns at `before` (the offset before the append), and the subscriptions that follow it
   * woken.
   */
  async appended(path: string, before: string) {
    for (const row of await this.store.all()) {
      const config = configOf(row)
      const links = await this.store.links(row.id)
      const linked = links.some((link) => link.path === path)
      const matches = config.pattern !== null && globMatch(config.pattern, path) && linkable(path)
      if (!linked && !matches) continue
      // A pattern links only its owner's streams.
      if (!linked && (await this.streams.tail(path, row.ownerId)) === null) continue
      if (!linked) await this.store.link(row.id, path, 'glob', before)
      await this.wakes.wake(row, config, null)
    }
  }

  /** Lapsed leases cleared and due retries sent: what any replica's timer runs. */
  async sweep() {
    const now = nowMs()
    for (const row of await this.store.due(now)) {
      const from = { generation: row.generation, wakeId: row.wakeId }
      if (row.wakeId !== null && (row.leaseExpiresAt ?? 0) <= now) {
        await this.wakes.finish(row.id, from, null)
      } else if (row.wakeId === null && (row.nextAttemptAt ?? Infinity) <= now) {
        if (await this.store.transition(row.id, from, { nextAttemptAt: null })) {
          await this.wakes.wake({ ...row, nextAttemptAt: null }, configOf(row), null)
        }
      }
    }
  }

  /** A subscription as `GET` answers it. */
  async view(row: SubscriptionRow, config: SubscriptionConfig, urls: ReservedUrls) {
    const links = await this.store.links(row.id)
    return {
      id: row.id,
      subscription_id: row.id,
      type: config.type,
      pattern: config.pattern,
      streams: links.map((link) => ({
        path: link.path,
        link_type: linkType(link),
        acked_offset: link.ackedOffset,
      })),
      webhook: config.webhookUrl
        ? {
            url: config.webhookUrl,
            signing: {
              alg: 'ed25519',
              kid: this.signing.kid,
              jwks_url: `${urls.root}/__ds/jwks.json`,
            },
          }
        : null,
      wake_stream: config.wakeStream,
      lease_ttl_ms: config.leaseTtlMs,
      created_at: new Date(row.createdAt).toISOString(),
      status: row.status,
      description: config.description,
    }
  }

  async #owned(id: string, principal: Principal | null) {
    const row = await this.store.find(id)
    return row && row.ownerId === ownerOf(principal) ? row : null
  }

  /** The subscription whose current wake `token` and `body` name, or the refusal. */
  async #fenced(id: string, token: string | undefined, body: unknown) {
    const claims = this.signing.verify(token, nowMs())
    if (!claims || claims.sub !== id) return UNAUTHORIZED
    const row = await this.store.find(id)
    if (!row) return FENCED
    const input = (body ?? {}) as { wake_id?: unknown; generation?: unknown }
    const current =
      row.wakeId !== null &&
      claims.gen === row.generation &&
      claims.wake === row.wakeId &&
      input.generation === row.generation &&
      input.wake_id === row.wakeId
    if (!current) return FENCED
    return { row, config: configOf(row) }
  }

  async #tailOr(path: string, owner: string | null) {
    return (await this.streams.tail(path, owner)) ?? START_ACKED
  }
}

/** The acked offset of a stream linked before it exists: before its first message. */
const START_ACKED = START_OFFSET

const configOf = (row: SubscriptionRow) => JSON.parse(row.config) as SubscriptionConfig

/** Whether a stream's path fits a link (a longer one is never linked, by pattern or by name). */
const linkable = (path: string) => path.length <= LINK_PATH_MAX

const isStreamPath = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && linkable(value) && !value.startsWith('/')

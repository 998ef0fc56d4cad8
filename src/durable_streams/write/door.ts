import type { Principal } from '../../core/run.js'
import type { DurableAnswer, DurableRequest, RawReply } from '../answer.js'
import type { DurableStore } from '../../store/durable_store.js'
import { baseHeaders, dsRefusal, preflightAnswer } from '../read/headers.js'
import { serveHead, serveRead, type ReadRules } from '../read/serve.js'
import { appendStream } from './append.js'
import { removeStream, usable, type DurableAuthorize, type WriteContext } from './context.js'
import { createStream } from './create.js'
import { runIdOfPath } from './rules.js'
import { storedSource } from './stored_source.js'
import type { ChangeSource } from './waits.js'
import { DsSubscriptionStore } from '../../store/ds_subscriptions.js'
import { DsSubscriptions } from '../subscriptions/service.js'
import { WebhookSigning } from '../subscriptions/signing.js'
import { formatOffset } from '../protocol/offset.js'
import { STREAM_ROOT, subscribedStreams } from './subscribed.js'

/** Config `durableStreams.subscriptions`: the reserved subscription APIs (PROTOCOL.md 6-7). */
export interface DurableSubscriptionsOptions {
  /**
   * What webhook signatures and wake tokens are derived from (keep it secret, the same on every
   * replica). Default on AdonisJS: the app's `APP_KEY`.
   */
  secret?: string
  /** Allow `http://localhost` and `http://127.0.0.x` webhook URLs (development). Default false. */
  localWebhooks?: boolean
  /** How often a replica looks for lapsed leases and due webhook retries, in ms. Default 1000. */
  sweepMs?: number
}

/** Options of the write path's door (config `durableStreams`). */
export interface DurableStreamsOptions {
  /** Who may create, append to, read and delete which stream. Default: its creator only. */
  authorize?: DurableAuthorize
  /** A long-poll at the tail answers 204 after this long. Default 20 s. */
  longPollTimeoutMs?: number
  /** A catch-up answer's size, about. Default 1 MiB. */
  chunkBytes?: number
  /** An SSE connection ends after this long. Default 60 s. */
  sseCloseMs?: number
  /** A body's cap in bytes (413 above). Default 4 MiB. */
  maxBodyBytes?: number
  /**
   * Subscriptions (`/v1/stream/__ds/subscriptions/:id`: webhooks and pull-wake). Default off:
   * the reserved `__ds` paths then answer 404.
   */
  subscriptions?: DurableSubscriptionsOptions
}

/**
 * The generic Durable Streams of the package (PROTOCOL.md, read and write paths): streams
 * created by `PUT`, any content type, stored as streams of the package (`DurableStore`),
 * read through the one read path (`read/`). A request names the stream by its path under the
 * door.
 */
export class DurableStreamsDoor {
  readonly #ctx: WriteContext
  /** The subscriptions of these streams, when configured (`options.subscriptions`). */
  readonly subscriptions: DsSubscriptions | null = null

  constructor(
    store: DurableStore,
    changes: ChangeSource,
    readonly options: DurableStreamsOptions = {},
    closing?: AbortSignal
  ) {
    this.#ctx = { store, changes, authorize: options.authorize }
    const subscribing = options.subscriptions
    if (!subscribing) return
    if (!subscribing.secret) {
      throw new Error('agent-stream: durableStreams.subscriptions needs a secret (APP_KEY)')
    }
    const subscriptions = new DsSubscriptions(
      new DsSubscriptionStore(store.client, store.tables),
      subscribedStreams(this.#ctx),
      new WebhookSigning(subscribing.secret),
      { localWebhooks: subscribing.localWebhooks, sweepMs: subscribing.sweepMs ?? 1000 }
    )
    this.subscriptions = subscriptions
    this.#ctx.appended = (path, afterSeq) => {
      if (!path.startsWith(STREAM_ROOT)) return
      const before = formatOffset({ seq: afterSeq })
      void subscriptions.appended(path.slice(STREAM_ROOT.length), before).catch(() => {})
    }
    closing?.addEventListener('abort', () => subscriptions.close(), { once: true })
  }

  /** Stop the subscriptions' sweep (a replica shutting down; the routes do on `closing`). */
  close() {
    this.subscriptions?.close()
  }

  /** Answer `request` for the stream at `path`. */
  async answer(path: string, request: DurableRequest): Promise<DurableAnswer> {
    if (request.method === 'OPTIONS') return preflightAnswer()
    // The reserved control paths (PROTOCOL.md 6) are never streams.
    if (path.startsWith(`${STREAM_ROOT}__ds/`) || path === `${STREAM_ROOT}__ds`) {
      return dsRefusal(404, 'not_found', 'Subscriptions are not enabled on this server.')
    }
    const runId = runIdOfPath(path)
    const write = {
      path,
      principal: request.principal,
      headers: request.headers,
      bytes: request.bytes ?? new Uint8Array(),
      url: request.url,
    }
    switch (request.method) {
      case 'PUT':
        return createStream(this.#ctx, write)
      case 'POST':
        return appendStream(this.#ctx, write, runId)
      case 'DELETE':
        return this.#delete(path, runId, request.principal)
      case 'HEAD':
      case 'GET': {
        const found = await usable(this.#ctx, write, runId, 'read')
        if ('kind' in found) return found
        const source = storedSource(this.#ctx.store, found, this.#ctx.changes)
        if (request.method === 'HEAD') return serveHead(source, { id: path })
        return serveRead(source, request, this.#rules(path))
      }
      default:
        return dsRefusal(405, 'method_not_allowed', 'No such method on a stream.')
    }
  }

  #rules(path: string): ReadRules {
    return {
      id: path,
      longPollTimeoutMs: this.options.longPollTimeoutMs,
      chunkBytes: this.options.chunkBytes,
      sseCloseMs: this.options.sseCloseMs,
      cache: 'private',
    }
  }

  /** `DELETE` (5.4): 204; soft while forks of it remain; 404 none, 410 soft-deleted already. */
  async #delete(path: string, runId: string, principal: Principal | null): Promise<RawReply> {
    const found = await usable(this.#ctx, { path, principal }, runId, 'delete')
    if ('kind' in found) return found
    return this.#ctx.store.transaction(async (tx) => {
      const record = await tx.lock(runId)
      if (!record) return dsRefusal(404, 'not_found', 'No such stream.')
      await removeStream(tx, record)
      return { kind: 'raw', status: 204, headers: baseHeaders() }
    })
  }
}

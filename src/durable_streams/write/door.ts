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
}

/**
 * The generic Durable Streams of the package (PROTOCOL.md, read and write paths): streams
 * created by `PUT`, any content type, stored as streams of the package (`DurableStore`),
 * read through the one read path (`read/`). A request names the stream by its path under the
 * door.
 */
export class DurableStreamsDoor {
  readonly #ctx: WriteContext

  constructor(
    store: DurableStore,
    changes: ChangeSource,
    readonly options: DurableStreamsOptions = {}
  ) {
    this.#ctx = { store, changes, authorize: options.authorize }
  }

  /** Answer `request` for the stream at `path`. */
  async answer(path: string, request: DurableRequest): Promise<DurableAnswer> {
    if (request.method === 'OPTIONS') return preflightAnswer()
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

import { formatOffset } from '../protocol/offset.js'
import type { SubscribedStreams } from '../subscriptions/wakes.js'
import { appendStream } from './append.js'
import { allowed, type DurableAction, type WriteContext } from './context.js'
import { expired, runIdOfPath } from './rules.js'

/** Where the write path's streams live under the door: `/v1/stream/<stream-root-relative path>`. */
export const STREAM_ROOT = '/v1/stream/'

/**
 * The write path's streams as a subscription sees them (stream-root-relative paths), always on
 * behalf of its owner: a stream's tail, every live stream (a new pattern's backfill), and the
 * append of a wake event to a pull-wake subscription's wake stream. A stream its owner may not
 * read (append to, for a wake stream) is one it does not see: the door's rule
 * (`authorize`, else a stream is its creator's), asked for `{ id: owner }` (no roles: a
 * subscription keeps only its creator's id).
 */
export function subscribedStreams(ctx: WriteContext): SubscribedStreams {
  const principalOf = (owner: string | null) => (owner === null ? null : { id: owner })
  const usable = async (path: string, owner: string | null, action: DurableAction) => {
    const full = `${STREAM_ROOT}${path}`
    const record = await ctx.store.find(runIdOfPath(full))
    if (!record || record.softDeleted || expired(record.expiresAt)) return null
    const may = await allowed(
      ctx,
      { path: full, principal: principalOf(owner) },
      action,
      record.owner
    )
    return may ? record : null
  }
  return {
    async tail(path, owner) {
      const record = await usable(path, owner, 'read')
      return record ? formatOffset({ seq: record.lastSeq }) : null
    },
    async list(owner) {
      const streams = await ctx.store.live(STREAM_ROOT)
      const seen = []
      for (const stream of streams) {
        const path = stream.path.slice(STREAM_ROOT.length)
        if (await usable(path, owner, 'read')) {
          seen.push({ path, tail: formatOffset({ seq: stream.lastSeq }) })
        }
      }
      return seen
    },
    async writable(path, owner) {
      return (await usable(path, owner, 'append')) !== null
    },
    async append(path, message, owner) {
      if (!(await usable(path, owner, 'append'))) return false
      const full = `${STREAM_ROOT}${path}`
      const reply = await appendStream(
        // Checked above for the subscription's owner: the append itself is the server's.
        { ...ctx, authorize: () => true },
        {
          path: full,
          principal: null,
          headers: { 'content-type': 'application/json' },
          bytes: new TextEncoder().encode(JSON.stringify(message)),
        },
        runIdOfPath(full)
      )
      return reply.status < 300
    },
  }
}

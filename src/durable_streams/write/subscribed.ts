import { formatOffset } from '../protocol/offset.js'
import type { SubscribedStreams } from '../subscriptions/wakes.js'
import { appendStream } from './append.js'
import type { WriteContext } from './context.js'
import { expired, runIdOfPath } from './rules.js'

/** Where the write path's streams live under the door: `/v1/stream/<stream-root-relative path>`. */
export const STREAM_ROOT = '/v1/stream/'

/**
 * The write path's streams as subscriptions see them (stream-root-relative paths): a stream's
 * tail, every live stream (a new pattern's backfill), and the append of a wake event to a
 * pull-wake subscription's wake stream; each only of the subscription owner's streams (the
 * default rule of the door, whatever the `authorize` hook says).
 */
export function subscribedStreams(ctx: WriteContext): SubscribedStreams {
  const live = async (path: string, owner: string | null) => {
    const record = await ctx.store.find(runIdOfPath(`${STREAM_ROOT}${path}`))
    return record && record.owner === owner && !record.softDeleted && !expired(record.expiresAt)
      ? record
      : null
  }
  return {
    async tail(path, owner) {
      const record = await live(path, owner)
      return record ? formatOffset({ seq: record.lastSeq }) : null
    },
    async list(owner) {
      const streams = await ctx.store.live(STREAM_ROOT, owner)
      return streams.map((stream) => ({
        path: stream.path.slice(STREAM_ROOT.length),
        tail: formatOffset({ seq: stream.lastSeq }),
      }))
    },
    async append(path, message, owner) {
      const full = `${STREAM_ROOT}${path}`
      // The server's own write, on the subscription owner's behalf: only to a stream of theirs.
      const reply = await appendStream(
        { ...ctx, authorize: (request) => request.owner === owner },
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

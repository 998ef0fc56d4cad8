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
 * pull-wake subscription's wake stream (the server's own write: no principal's rule applies).
 */
export function subscribedStreams(ctx: WriteContext): SubscribedStreams {
  const live = async (path: string) => {
    const record = await ctx.store.find(runIdOfPath(`${STREAM_ROOT}${path}`))
    return record && !record.softDeleted && !expired(record.expiresAt) ? record : null
  }
  return {
    async tail(path) {
      const record = await live(path)
      return record ? formatOffset({ seq: record.lastSeq }) : null
    },
    async list() {
      const streams = await ctx.store.live(STREAM_ROOT)
      return streams.map((stream) => ({
        path: stream.path.slice(STREAM_ROOT.length),
        tail: formatOffset({ seq: stream.lastSeq }),
      }))
    },
    async append(path, message) {
      const full = `${STREAM_ROOT}${path}`
      const reply = await appendStream(
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

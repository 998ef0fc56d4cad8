import type { HttpContext } from '@adonisjs/core/http'
import { serveChunks } from '../sse.js'
import type { QueueLive } from './live.js'

/**
 * The console's `GET /admin/events` stream: SSE, one `queue` event (data: the queue's
 * fingerprint) whenever the replica's {@link QueueLive} sees the queue change. It ends after
 * `maxMs` (the browser reconnects after `retry`), when the client goes away, or when `closing`
 * aborts (the replica shuts down).
 */
export async function serveQueueEvents(
  ctx: HttpContext,
  live: QueueLive,
  options: { closing?: AbortSignal; maxMs: number }
) {
  const controller = new AbortController()
  const versions: string[] = []
  let wake: (() => void) | null = null
  const stop = await live.subscribe((version) => {
    versions.push(version)
    wake?.()
  })
  const timer = setTimeout(() => controller.abort(), options.maxMs)
  timer.unref()
  const signal = controller.signal
  const closing = options.closing
  const close = () => controller.abort()
  if (closing?.aborted) close()
  closing?.addEventListener('abort', close, { once: true })
  async function* chunks() {
    yield 'retry: 1000\n\n'
    while (!signal.aborted) {
      while (versions.length > 0) {
        yield `event: queue\ndata: ${versions.shift()}\n\n`
      }
      await new Promise<void>((resolve) => {
        wake = resolve
        signal.addEventListener('abort', () => resolve(), { once: true })
      })
      wake = null
    }
  }
  try {
    await serveChunks(ctx.request.request, ctx.response.response, chunks(), {
      controller,
      headers: ctx.response.getHeaders(),
    })
  } finally {
    closing?.removeEventListener('abort', close)
    clearTimeout(timer)
    stop()
  }
}

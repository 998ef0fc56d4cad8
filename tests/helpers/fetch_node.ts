import type http from 'node:http'
import { Readable } from 'node:stream'

/**
 * Node's `http` speaks no Fetch API: this is the few lines of adapter a host writes (Hono's
 * `@hono/node-server` and others do the same): request in as a `Request`, `Response` body piped
 * out with backpressure.
 */
export function toNode(handle: (request: Request) => Promise<Response>): http.RequestListener {
  return async (req, res) => {
    const controller = new AbortController()
    res.on('close', () => controller.abort())
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers: req.headers as Record<string, string>,
      body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
      signal: controller.signal,
      ...(hasBody ? { duplex: 'half' } : {}),
    } as RequestInit)
    const response = await handle(request)
    res.writeHead(response.status, Object.fromEntries(response.headers))
    res.flushHeaders()
    if (!response.body) return res.end()
    Readable.fromWeb(response.body as any).pipe(res)
  }
}

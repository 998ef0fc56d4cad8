import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { createRuntime, type RuntimeOptions } from '../../src/runtime.js'
import { createDatabase, resetTables } from './db.js'

type Runtime = ReturnType<typeof createRuntime>

/**
 * Node's `http` speaks no Fetch API: this is the few lines of adapter a host writes (Hono's
 * `@hono/node-server` and others do the same): request in as a `Request`, `Response` body piped
 * out with backpressure.
 */
export function toNode(handle: (request: Request) => Promise<Response>): RequestListener {
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

/**
 * A runtime on fresh tables, served by a Fetch-API handler on a bare `node:http` server on
 * loopback: no AdonisJS app, router or HTTP layer. `x-user` is the principal. `close` stops the
 * server, waits for the runs and closes the database.
 */
export async function serveRuntime(
  options: RuntimeOptions,
  handler: (
    runtime: Runtime,
    principal: (request: Request) => { id: string } | null
  ) => (request: Request) => Promise<Response>
) {
  const db = createDatabase()
  await resetTables(db)
  const runtime = createRuntime(db, options)
  const principal = (request: Request) => {
    const user = request.headers.get('x-user')
    return user ? { id: user } : null
  }
  const server = createServer(toNode(handler(runtime, principal)))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await runtime.driver.settled()
    await runtime.sink.shutdown()
    await db.manager.closeAll()
  }
  return { url, runtime, db, close }
}

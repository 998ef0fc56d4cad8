import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable, pipeline } from 'node:stream'
import { createRuntime, type RuntimeOptions } from '../../src/runtime.js'
import { createDatabase, resetTables } from './db.js'
import { within } from './bounded.js'

type Runtime = ReturnType<typeof createRuntime>

/**
 * Node's `http` speaks no Fetch API: this is the few lines of adapter a host writes, as
 * docs/agui.md shows them ("The door outside AdonisJS"; Hono's `@hono/node-server` and others do
 * the same): request in as a `Request`, `Response` body piped out with backpressure. An error on
 * either stream (a body cut off mid-way, a client that resets mid-response, a response body that
 * fails) ends that request, never the process: everything runs inside the `try`, and `pipeline`
 * (unlike `pipe`) handles an error on either side.
 */
export function toNode(handle: (request: Request) => Promise<Response>): RequestListener {
  return async (req, res) => {
    try {
      const controller = new AbortController()
      res.on('close', () => controller.abort())
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
      const response = await handle(
        new Request(`http://${req.headers.host}${req.url}`, {
          method: req.method,
          headers: req.headers as Record<string, string>,
          body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
          signal: controller.signal,
          ...(hasBody ? { duplex: 'half' } : {}),
        } as RequestInit)
      )
      res.writeHead(response.status, Object.fromEntries(response.headers))
      res.flushHeaders()
      if (!response.body) return void res.end()
      pipeline(Readable.fromWeb(response.body as any), res, () => {})
    } catch {
      if (res.headersSent) res.destroy()
      else
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end('{"code":"internal_error","message":"Internal error"}')
    }
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
    await within(
      runtime.driver.settled(),
      30_000,
      'the runs this test started did not settle after it ended (a runner still waiting?)'
    )
    await runtime.sink.shutdown()
    await db.manager.closeAll()
  }
  return { url, runtime, db, close }
}

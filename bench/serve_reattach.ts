/**
 * The AG-UI door's re-attach route on a bare node:http server (no framework around it):
 * `GET /<runId>?after=` is the door's work plus the SSE writer, as the AdonisJS controller does it.
 */
import { createServer } from 'node:http'
import type { AgUiDoor } from '../src/agui/door/index.js'
import { serveAgUiEvents } from '../src/http/sse.js'

export async function serveReattach(door: AgUiDoor) {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x')
    const controller = new AbortController()
    const reply = await door.reattach(
      url.pathname.slice(1),
      url.searchParams.get('after') ?? undefined,
      null,
      controller.signal
    )
    if (reply.kind === 'refused') return res.writeHead(reply.status).end()
    await serveAgUiEvents(req, res, reply.events, { controller })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

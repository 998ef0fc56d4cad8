import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { hostname } from 'node:os'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { snapshotTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * Webhook URLs that reach this machine or its network (PROTOCOL.md 6.2, 12.8) are refused in
 * every spelling: IPv4 addresses inside IPv6 ones (mapped, compatible, NAT64), site-local IPv6,
 * a trailing-dot `localhost.`, and host names that resolve to a loopback address.
 */

async function listen(server: Server) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

test.group('Durable Streams webhooks: SSRF', () => {
  test('a webhook URL reaching a local address in any spelling is refused and writes nothing', async ({
    assert,
    cleanup,
  }) => {
    const stack = await setupSink()
    const closing = new AbortController()
    const handler = createDurableStreamsFetchHandler(stack.sink, {
      basePath: '/ds',
      // Production: no local webhooks.
      subscriptions: { secret: 'ssrf-spec-secret', sweepMs: 0 },
      closing: closing.signal,
    })
    const server = createServer(toNode(handler))
    const root = `http://127.0.0.1:${await listen(server)}/ds/v1/stream`
    cleanup(async () => {
      closing.abort()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    const urls = [
      'https://[::ffff:127.0.0.1]/hook',
      'https://[::ffff:169.254.169.254]/latest/meta-data',
      'https://[::ffff:10.0.0.1]/hook',
      'https://[::127.0.0.1]/hook',
      'https://[64:ff9b::a9fe:a9fe]/hook',
      'https://[::ffff:0:7f00:1]/hook',
      'https://[fec0::1]/hook',
      'https://localhost./hook',
      // This machine's own name: /etc/hosts resolves it to a loopback address.
      `https://${hostname()}/hook`,
    ]
    const before = await snapshotTables(stack.db)
    const refused: Record<string, number> = {}
    for (const [index, url] of urls.entries()) {
      const response = await fetch(`${root}/__ds/subscriptions/ssrf-${index}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'webhook', pattern: 'jobs/*', webhook: { url } }),
      })
      refused[url] = response.status
      if (response.status === 400) {
        const body = (await response.json()) as { error: { code: string; message: string } }
        assert.equal(body.error.code, 'WEBHOOK_URL_REJECTED')
        assert.notInclude(body.error.message, url)
      } else await response.arrayBuffer()
    }
    assert.deepEqual(refused, Object.fromEntries(urls.map((url) => [url, 400])))
    assert.equal(await snapshotTables(stack.db), before)
  })
})

import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * A webhook's callback URL is its subscription's: the reserved URLs its creating request named,
 * whichever replica delivers the wake (one that never served a subscription `PUT` included), and
 * never what another caller's request (another `Host`) named later.
 */

async function listen(server: Server) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

async function serveDoor(shared?: Awaited<ReturnType<typeof setupSink>>) {
  const stack = shared ?? (await setupSink())
  const closing = new AbortController()
  const handler = createDurableStreamsFetchHandler(stack.sink, {
    basePath: '/ds',
    // No sweep: a wake is delivered by the replica that issues it.
    subscriptions: { secret: 'callback-spec-secret', localWebhooks: true, sweepMs: 0 },
    closing: closing.signal,
    principal: (request) => {
      const user = request.headers.get('x-user')
      return user ? { id: user } : null
    },
  })
  const server = createServer(toNode(handler))
  const port = await listen(server)
  return {
    ...stack,
    port,
    root: `http://127.0.0.1:${port}/ds/v1/stream`,
    close: async () => {
      closing.abort()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

async function receiver() {
  const deliveries: any[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', () => {
      deliveries.push(JSON.parse(Buffer.concat(chunks).toString('utf8')))
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    })
  })
  const url = `http://127.0.0.1:${await listen(server)}/hook`
  return {
    url,
    async first(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (deliveries.length === 0) {
        if (Date.now() > deadline) throw new Error('no delivery')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      return deliveries[0]
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A JSON request with a `Host` of the caller's choosing (fetch would not send it). */
function put(port: number, path: string, body: unknown, headers: Record<string, string>) {
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      }
    )
    req.once('error', reject)
    req.end(JSON.stringify(body))
  })
}

const json = (method: string, body: unknown, user: string) => ({
  method,
  headers: { 'content-type': 'application/json', 'x-user': user },
  body: JSON.stringify(body),
})

test.group('Durable Streams subscriptions: callback URL', () => {
  test('a replica that never served the subscription PUT delivers its wake, with the callback URL of its creation', async ({
    assert,
    cleanup,
  }) => {
    const a = await serveDoor()
    cleanup(a.close)
    const b = await serveDoor(await setupSink({}, false))
    cleanup(b.close)
    const hook = await receiver()
    cleanup(hook.close)
    const created = await fetch(
      `${a.root}/__ds/subscriptions/elsewhere`,
      json('PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } }, 'alice')
    )
    assert.equal(created.status, 201)
    // The replica that took the PUT goes away (a deploy); the other takes the appends.
    await a.close()
    assert.equal((await fetch(`${b.root}/jobs/x`, json('PUT', [1], 'alice'))).status, 201)
    const delivery = await hook.first()
    assert.equal(delivery.callback_url, `${a.root}/__ds/subscriptions/elsewhere/callback`)
  })

  test("another caller's Host never becomes the callback URL of a subscription", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    const hook = await receiver()
    cleanup(hook.close)
    const created = await fetch(
      `${door.root}/__ds/subscriptions/alice-hook`,
      json('PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } }, 'alice')
    )
    assert.equal(created.status, 201)
    // Mallory's own subscription, asked with a Host of hers.
    const status = await put(
      door.port,
      '/ds/v1/stream/__ds/subscriptions/mallory-hook',
      { type: 'webhook', pattern: 'other/*', webhook: { url: hook.url } },
      { 'host': 'evil.example', 'x-user': 'mallory' }
    )
    assert.equal(status, 201)
    assert.equal((await fetch(`${door.root}/jobs/a`, json('PUT', [1], 'alice'))).status, 201)
    const delivery = await hook.first()
    assert.equal(delivery.subscription_id, 'alice-hook')
    assert.equal(delivery.callback_url, `${door.root}/__ds/subscriptions/alice-hook/callback`)
  })
})

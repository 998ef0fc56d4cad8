import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * A webhook's answer is read up to a small cap (its `{ done }` is all the server needs): a
 * receiver that answers with an endless body is cut off, not buffered (the subscriber's server is
 * anyone's, and the replica's memory is everyone's).
 */

async function listen(server: Server) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

const TOTAL = 256 * 1024 * 1024

test.group('Durable Streams webhooks: the answer read', () => {
  test('a webhook answering an endless body is cut off after a small part of it', async ({
    assert,
    cleanup,
  }) => {
    const { sink } = await setupSink()
    const closing = new AbortController()
    const handler = createDurableStreamsFetchHandler(sink, {
      basePath: '/ds',
      subscriptions: { secret: 'answer-cap-secret', localWebhooks: true, sweepMs: 0 },
      closing: closing.signal,
    })
    const server = createServer(toNode(handler))
    const root = `http://127.0.0.1:${await listen(server)}/ds/v1/stream`
    cleanup(async () => {
      closing.abort()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    // The receiver writes up to 256 MiB, as fast as the server reads it, and says how much.
    let resolveSent: (sent: number) => void
    const sent = new Promise<number>((resolve) => (resolveSent = resolve))
    const hook = createServer((req, res) => {
      req.resume()
      req.on('end', async () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        const chunk = Buffer.alloc(64 * 1024, 0x20)
        let written = 0
        let gone = false
        res.on('close', () => (gone = true))
        while (!gone && written < TOTAL) {
          written += chunk.byteLength
          if (!res.write(chunk)) {
            await new Promise((resolve) => {
              res.once('drain', resolve)
              res.once('close', resolve)
            })
          }
        }
        if (!gone) res.end()
        resolveSent(written)
      })
    })
    const hookUrl = `http://127.0.0.1:${await listen(hook)}/hook`
    cleanup(async () => {
      hook.closeAllConnections()
      await new Promise((resolve) => hook.close(resolve))
    })
    const json = (method: string, body: unknown) => ({
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const created = await fetch(
      `${root}/__ds/subscriptions/endless`,
      json('PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hookUrl } })
    )
    assert.equal(created.status, 201)
    assert.equal((await fetch(`${root}/jobs/a`, json('PUT', [1]))).status, 201)
    const written = await sent
    // Cut off: what the sockets' buffers held at most, nowhere near all of it.
    assert.isBelow(written, 32 * 1024 * 1024)
  }).timeout(60_000)
})

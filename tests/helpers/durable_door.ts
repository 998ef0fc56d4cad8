import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createDurableStreamsFetchHandler } from '../../src/http/durable_streams_fetch_handler.js'
import type { DurableSubscriptionsOptions } from '../../src/durable_streams/write/door.js'
import { setupSink } from './sink.js'
import { toNode } from './fetch_node.js'

/** Listen on a free loopback port; its number. */
export async function listen(server: Server) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

type Stack = Awaited<ReturnType<typeof setupSink>>

/**
 * The Durable Streams door's Fetch handler on `node:http` on loopback, on fresh tables (or on
 * `stack`'s: another replica of the same database), a request's principal its `x-user` header
 * (none: nobody), subscriptions as given (default off). `root` is the streams' root,
 * `<url>/ds/v1/stream`.
 */
export async function serveDurableDoor(
  options: { subscriptions?: DurableSubscriptionsOptions; stack?: Stack } = {}
) {
  const stack = options.stack ?? (await setupSink())
  const closing = new AbortController()
  const handler = createDurableStreamsFetchHandler(stack.sink, {
    basePath: '/ds',
    subscriptions: options.subscriptions,
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

/** One webhook delivery as received: its parsed body, its raw text, its signature header. */
export interface Delivery {
  body: any
  raw: string
  signature: string | null
}

/**
 * A webhook receiver on loopback answering each delivery with what `answer` says for its index
 * (default 200 `{}`: taken, not done).
 */
export async function webhookReceiver(
  answer: (index: number) => { status: number; body?: unknown } = () => ({ status: 200 })
) {
  const deliveries: Delivery[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      const signature = req.headers['webhook-signature']
      deliveries.push({
        raw,
        body: JSON.parse(raw),
        signature: typeof signature === 'string' ? signature : null,
      })
      const { status, body } = answer(deliveries.length - 1)
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body ?? {}))
    })
  })
  const url = `http://127.0.0.1:${await listen(server)}/hook`
  /** The first `n` deliveries, once they came (else an error after `timeoutMs`). */
  async function count(n: number, timeoutMs = 15_000) {
    const deadline = Date.now() + timeoutMs
    while (deliveries.length < n) {
      if (Date.now() > deadline) throw new Error(`${deliveries.length} of ${n} deliveries`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return deliveries
  }
  return {
    url,
    deliveries,
    count,
    /** The first delivery's body, once it came. */
    first: async (timeoutMs = 15_000) => (await count(1, timeoutMs))[0].body,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

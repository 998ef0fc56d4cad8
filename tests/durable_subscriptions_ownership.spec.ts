import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { tableNames } from '../src/store/schema.js'
import { setupSink } from './helpers/sink.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * Subscriptions see only their owner's streams: a pattern's backfill, a pattern matched by a
 * later append, an explicit link's offsets and a pull-wake's wake stream never reach (or write
 * to) another principal's stream.
 */

async function listen(server: Server) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

async function serveDoor() {
  const stack = await setupSink()
  const closing = new AbortController()
  const handler = createDurableStreamsFetchHandler(stack.sink, {
    basePath: '/ds',
    subscriptions: { secret: 'ownership-spec-secret', localWebhooks: true, sweepMs: 100 },
    closing: closing.signal,
    principal: (request) => {
      const user = request.headers.get('x-user')
      return user ? { id: user } : null
    },
  })
  const server = createServer(toNode(handler))
  const root = `http://127.0.0.1:${await listen(server)}/ds/v1/stream`
  return {
    ...stack,
    root,
    close: async () => {
      closing.abort()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A webhook receiver on loopback answering every delivery 200 (no done). */
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
    deliveries,
    async first(timeoutMs = 15_000) {
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

const as = (user: string, method: string, body?: unknown) => ({
  method,
  headers: { 'content-type': 'application/json', 'x-user': user },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
})

test.group('Durable Streams subscriptions: ownership', () => {
  test("a pattern's backfill links none of another principal's streams", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    assert.equal((await fetch(`${door.root}/jobs/bob`, as('bob', 'PUT', [1, 2, 3]))).status, 201)
    assert.equal((await fetch(`${door.root}/jobs/alice`, as('alice', 'PUT', [1]))).status, 201)
    const hook = await receiver()
    cleanup(hook.close)
    const created = await fetch(
      `${door.root}/__ds/subscriptions/alice-sub`,
      as('alice', 'PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } })
    )
    assert.equal(created.status, 201)
    const body = (await created.json()) as { streams: { path: string }[] }
    assert.deepEqual(
      body.streams.map((stream) => stream.path),
      ['jobs/alice']
    )
  })

  test("an append to another principal's stream matching a pattern neither links nor wakes it", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    const hook = await receiver()
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/alice-later`
    await fetch(
      sub,
      as('alice', 'PUT', { type: 'webhook', pattern: 'jobs/*', webhook: { url: hook.url } })
    )
    assert.equal((await fetch(`${door.root}/jobs/bob`, as('bob', 'PUT', [1, 2]))).status, 201)
    assert.equal((await fetch(`${door.root}/jobs/alice`, as('alice', 'PUT', [1]))).status, 201)
    const delivery = await hook.first()
    assert.deepEqual(
      delivery.streams.map((stream: { path: string }) => stream.path),
      ['jobs/alice']
    )
    const state = (await (await fetch(sub, as('alice', 'GET'))).json()) as any
    assert.deepEqual(
      state.streams.map((stream: { path: string }) => stream.path),
      ['jobs/alice']
    )
  })

  test("an explicit link to another principal's stream shows none of its offsets", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    assert.equal((await fetch(`${door.root}/secret/bob`, as('bob', 'PUT', [1, 2, 3]))).status, 201)
    const hook = await receiver()
    cleanup(hook.close)
    const sub = `${door.root}/__ds/subscriptions/alice-explicit`
    const created = await fetch(
      sub,
      as('alice', 'PUT', {
        type: 'webhook',
        streams: ['secret/bob', 'secret/none'],
        webhook: { url: hook.url },
      })
    )
    assert.equal(created.status, 201)
    const body = (await created.json()) as { streams: { path: string; acked_offset: string }[] }
    const offsets = Object.fromEntries(body.streams.map((s) => [s.path, s.acked_offset]))
    // Bob's stream looks like a stream that does not exist (yet).
    assert.equal(offsets['secret/bob'], offsets['secret/none'])
    const added = await fetch(`${sub}/streams`, as('alice', 'POST', { streams: ['secret/bob2'] }))
    assert.equal(added.status, 204)
  })

  test("a pull-wake's wake stream never gets written when it is another principal's", async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    assert.equal(
      (await fetch(`${door.root}/bob/inbox`, as('bob', 'PUT', [{ mine: 1 }]))).status,
      201
    )
    const created = await fetch(
      `${door.root}/__ds/subscriptions/alice-pull`,
      as('alice', 'PUT', { type: 'pull-wake', streams: ['alice/work'], wake_stream: 'bob/inbox' })
    )
    assert.equal(created.status, 201)
    assert.equal((await fetch(`${door.root}/alice/work`, as('alice', 'PUT', [1]))).status, 201)
    // Wait for the wake to be issued (a new generation on the subscription's row).
    const deadline = Date.now() + 15_000
    for (;;) {
      const row = await door.db
        .connection()
        .from(tableNames().dsSubscriptions)
        .where('id', 'alice-pull')
        .first()
      if (Number(row?.generation) >= 1) break
      if (Date.now() > deadline) throw new Error('no wake issued')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    // The wake's own write (if any) is in the same call as the row's transition: let it finish.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const read = await fetch(`${door.root}/bob/inbox?offset=-1`, as('bob', 'GET'))
    assert.equal(read.status, 200)
    assert.deepEqual(await read.json(), [{ mine: 1 }])
  })
})

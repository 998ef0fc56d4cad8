import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { DurableStream } from '@durable-streams/client'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { runIdOfPath } from '../src/durable_streams/write/rules.js'
import { summarizeRow } from '../src/inspection/summary.js'
import { toStoredRow } from '../src/store/rows.js'
import { setupSink } from './helpers/sink.js'
import { snapshotTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'
import { serveApp } from './helpers/http.js'

/**
 * The Durable Streams door's own rules, over real HTTP on loopback (the Fetch handler on
 * `node:http`; the body cap also through the AdonisJS routes): bad input answers the protocol's
 * status and writes nothing, a stream is a stream of the package (its rows, `inspect`'s summary),
 * a stream is its creator's, and the official client reads what it wrote.
 */

async function serveDoor(options: Parameters<typeof createDurableStreamsFetchHandler>[1] = {}) {
  const { db, sink } = await setupSink()
  const handler = createDurableStreamsFetchHandler(sink, {
    basePath: '/ds',
    longPollTimeoutMs: 300,
    principal: (request) => {
      const user = request.headers.get('x-user')
      return user ? { id: user } : null
    },
    ...options,
  })
  const server = createServer(toNode(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds`
  return {
    db,
    sink,
    base,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

const put = (url: string, type: string, body?: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'PUT', headers: { 'content-type': type, ...headers }, body })
const post = (url: string, type: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': type, ...headers }, body })

test.group('Durable Streams door: bad input writes nothing', () => {
  test('malformed and unknown offsets are 400, never an empty answer', async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    const url = `${door.base}/v1/stream/offsets`
    assert.equal((await put(url, 'text/plain', 'abc')).status, 201)
    for (const offset of ['zz', '', '0000000000000009_', '0000000000000000.0000000000000001']) {
      const response = await fetch(`${url}?offset=${encodeURIComponent(offset)}`)
      assert.equal(response.status, 400, offset)
      assert.equal(((await response.json()) as { code: string }).code, 'invalid_offset')
    }
    const twice = await fetch(`${url}?offset=-1&offset=-1`)
    assert.equal(twice.status, 400)
  })

  test('a content-type mismatch, a seq regression, a stale epoch, a closed stream and a body over the cap are refused and store nothing', async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor({ maxBodyBytes: 1024 })
    cleanup(door.close)
    const url = `${door.base}/v1/stream/refusals`
    assert.equal((await put(url, 'application/json', '[1]')).status, 201)
    assert.equal((await post(url, 'application/json', '2', { 'stream-seq': 'b' })).status, 204)
    const producer = { 'producer-id': 'p', 'producer-epoch': '2', 'producer-seq': '0' }
    assert.equal((await post(url, 'application/json', '3', producer)).status, 200)
    const before = await snapshotTables(door.db)

    const mismatch = await post(url, 'text/plain', 'x')
    assert.equal(mismatch.status, 409)
    const regression = await post(url, 'application/json', '4', { 'stream-seq': 'a' })
    assert.equal(regression.status, 409)
    const stale = await post(url, 'application/json', '4', { ...producer, 'producer-epoch': '1' })
    assert.equal(stale.status, 403)
    assert.equal(stale.headers.get('producer-epoch'), '2')
    const gap = await post(url, 'application/json', '4', { ...producer, 'producer-seq': '5' })
    assert.equal(gap.status, 409)
    assert.equal(gap.headers.get('producer-expected-seq'), '1')
    assert.equal((await post(url, 'application/json', '[]')).status, 400)
    assert.equal((await post(url, 'application/json', '{not json')).status, 400)
    const large = await post(url, 'application/json', JSON.stringify('x'.repeat(2000)))
    assert.equal(large.status, 413)
    assert.deepEqual(await snapshotTables(door.db), before)

    const closing = await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })
    assert.equal(closing.status, 204)
    const closed = await snapshotTables(door.db)
    const after = await post(url, 'application/json', '5')
    assert.equal(after.status, 409)
    assert.equal(after.headers.get('stream-closed'), 'true')
    assert.deepEqual(await snapshotTables(door.db), closed)
    const read = await fetch(`${url}?offset=-1`)
    assert.deepEqual(await read.json(), [1, 2, 3])
    assert.equal(read.headers.get('stream-closed'), 'true')
  })

  test('a body over the cap is 413 through the AdonisJS routes too, before anything is stored', async ({
    assert,
  }) => {
    const { url } = await serveApp({ durableStreams: { maxBodyBytes: 1024 } })
    const stream = `${url}/ds/v1/stream/adonis-cap`
    assert.equal((await put(stream, 'text/plain', 'a/b')).status, 201)
    const large = await post(stream, 'text/plain', 'x'.repeat(2000))
    assert.equal(large.status, 413)
    const read = await fetch(`${stream}?offset=-1`)
    assert.equal(await read.text(), 'a/b')
    const head = await fetch(stream, { method: 'HEAD' })
    assert.equal(head.status, 200)
    assert.equal(head.headers.get('cache-control'), 'no-store')
  })
})

test.group('Durable Streams door: a stream of the package', () => {
  test('its rows are a streams row and one data row per append, which inspect summarizes', async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    const path = '/v1/stream/a/long/path'
    await put(`${door.base}${path}`, 'application/octet-stream', 'bytes')
    await post(`${door.base}${path}`, 'application/octet-stream', 'more')
    const runId = runIdOfPath(path)
    const stream = await door.db.connection().from('agent_streams').where('run_id', runId).first()
    assert.equal(stream.status, 'open')
    const rows = await door.db
      .connection()
      .from('agent_stream_frames')
      .where('run_id', runId)
      .orderBy('seq')
    assert.deepEqual(
      rows.map((row) => [row.kind, Buffer.from(row.body, 'base64').toString()]),
      [
        ['data', 'bytes'],
        ['data', 'more'],
      ]
    )
    assert.match(summarizeRow(toStoredRow(rows[0])), /^data/)
    const meta = await door.db
      .connection()
      .from('agent_durable_streams')
      .where('run_id', runId)
      .first()
    assert.equal(meta.path, path)
  })

  test('the package purge removes expired and closed streams with every row they had', async ({
    assert,
    cleanup,
  }) => {
    const door = await serveDoor()
    cleanup(door.close)
    const expiring = '/v1/stream/expiring'
    const closed = '/v1/stream/closed'
    const kept = '/v1/stream/kept'
    await put(`${door.base}${expiring}`, 'text/plain', 'a', { 'stream-ttl': '3600' })
    await fetch(`${door.base}${expiring}`, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain',
        'producer-id': 'p',
        'producer-epoch': '0',
        'producer-seq': '0',
      },
      body: 'b',
    })
    await put(`${door.base}${closed}`, 'text/plain', 'c', { 'stream-closed': 'true' })
    await put(`${door.base}${kept}`, 'text/plain', 'd')
    // Its TTL ran out (the clock moved on).
    await door.db
      .connection()
      .from('agent_durable_streams')
      .where('run_id', runIdOfPath(expiring))
      .update({ expires_at: Date.now() - 1000 })
    assert.equal(await door.sink.purge({ olderThanMs: 0 }), 2)
    for (const path of [expiring, closed]) {
      const runId = runIdOfPath(path)
      for (const table of [
        'agent_streams',
        'agent_stream_frames',
        'agent_durable_streams',
        'agent_durable_producers',
      ]) {
        const rows = await door.db.connection().from(table).where('run_id', runId)
        assert.lengthOf(rows, 0, `${table} of ${path}`)
      }
      assert.equal((await fetch(`${door.base}${path}?offset=-1`)).status, 404)
    }
    assert.equal(await (await fetch(`${door.base}${kept}?offset=-1`)).text(), 'd')
  })

  test("a stream is its creator's: another principal finds none", async ({ assert, cleanup }) => {
    const door = await serveDoor()
    cleanup(door.close)
    const url = `${door.base}/v1/stream/mine`
    assert.equal((await put(url, 'text/plain', 'hi', { 'x-user': 'alice' })).status, 201)
    assert.equal((await fetch(`${url}?offset=-1`, { headers: { 'x-user': 'alice' } })).status, 200)
    assert.equal((await fetch(`${url}?offset=-1`, { headers: { 'x-user': 'bob' } })).status, 404)
    assert.equal((await fetch(`${url}?offset=-1`)).status, 404)
    assert.equal((await post(url, 'text/plain', 'x', { 'x-user': 'bob' })).status, 404)
    assert.equal((await fetch(url, { method: 'DELETE', headers: { 'x-user': 'bob' } })).status, 404)
  })

  test('the official client writes and reads a JSON stream', async ({ assert, cleanup }) => {
    const door = await serveDoor()
    cleanup(door.close)
    const url = `${door.base}/v1/stream/client`
    const handle = await DurableStream.create({ url, contentType: 'application/json' })
    await handle.append(JSON.stringify({ n: 1 }))
    // The client sends each append as a batch of one: an array is one message.
    await handle.append(JSON.stringify([{ n: 2 }, { n: 3 }]))
    const response = await handle.stream({ live: false })
    assert.deepEqual(await response.json(), [{ n: 1 }, [{ n: 2 }, { n: 3 }]])
  })
})

import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { snapshotTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * Stream paths longer than a subscription link holds (512 characters): an explicit one is a 400
 * naming the rule, nothing written; a stream that long matched by a pattern is not linked, and
 * the subscription is created (201) with the others, on every database.
 */

test.group('Durable Streams subscriptions: long stream paths', () => {
  test('an explicit stream path past 512 characters is 400; a pattern backfill passes over one', async ({
    assert,
    cleanup,
  }) => {
    const { db, sink } = await setupSink()
    const closing = new AbortController()
    const handler = createDurableStreamsFetchHandler(sink, {
      basePath: '/ds',
      subscriptions: { secret: 'long-paths-secret', sweepMs: 0 },
      closing: closing.signal,
    })
    const server = createServer(toNode(handler))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanup(async () => {
      closing.abort()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds/v1/stream`
    const long = `jobs/${'x'.repeat(600)}`
    const json = (method: string, body: unknown) => ({
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    assert.equal((await fetch(`${root}/${long}`, json('PUT', [1]))).status, 201)
    assert.equal((await fetch(`${root}/jobs/short`, json('PUT', [1]))).status, 201)
    const before = await snapshotTables(db)
    const explicit = await fetch(
      `${root}/__ds/subscriptions/long-explicit`,
      json('PUT', { type: 'pull-wake', streams: [long], wake_stream: 'wakes' })
    )
    assert.equal(explicit.status, 400)
    assert.equal(await snapshotTables(db), before)
    const pattern = await fetch(
      `${root}/__ds/subscriptions/long-pattern`,
      json('PUT', { type: 'pull-wake', pattern: 'jobs/*', wake_stream: 'wakes' })
    )
    assert.equal(pattern.status, 201)
    const body = (await pattern.json()) as { streams: { path: string }[] }
    assert.deepEqual(
      body.streams.map((stream) => stream.path),
      ['jobs/short']
    )
  })
})

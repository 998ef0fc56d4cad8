import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * A subscription's pattern is matched in time linear in pattern and path (each `**` once per
 * position, not once per way of splitting the path): a pattern of many `**` segments against a
 * deep stream path answers, and the next append is matched too. (Backtracking, this blocked the
 * replica's event loop for good: the spec then never ends.)
 */

test.group('Durable Streams subscriptions: patterns', () => {
  test('a pattern of many ** segments against a deep path is answered, with the right links', async ({
    assert,
    cleanup,
  }) => {
    const { sink } = await setupSink()
    const closing = new AbortController()
    const handler = createDurableStreamsFetchHandler(sink, {
      basePath: '/ds',
      subscriptions: { secret: 'glob-spec-secret', sweepMs: 0 },
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
    const json = (method: string, body: unknown) => ({
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const deep = Array.from({ length: 60 }, () => 'a').join('/')
    assert.equal((await fetch(`${root}/${deep}`, json('PUT', [1]))).status, 201)
    assert.equal((await fetch(`${root}/${deep}/z`, json('PUT', [1]))).status, 201)
    const pattern = `${Array.from({ length: 30 }, () => '**').join('/')}/z`
    const created = await fetch(
      `${root}/__ds/subscriptions/globs`,
      json('PUT', { type: 'pull-wake', pattern, wake_stream: 'wakes' })
    )
    assert.equal(created.status, 201)
    const body = (await created.json()) as { streams: { path: string }[] }
    assert.deepEqual(
      body.streams.map((stream) => stream.path),
      [`${deep}/z`]
    )
    assert.equal((await fetch(`${root}/${deep}`, json('POST', [2]))).status, 204)
  })
})

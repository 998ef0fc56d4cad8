import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * Creates of different streams at once, and first appends of new producers to different
 * streams, never fail one another: on MariaDB a write that finds no row (a create's clean-up of
 * a path's leftover rows, a producer's update before its insert) locked the gap where other
 * streams' rows go (a deadlock, 503).
 */

test.group('Durable Streams door: concurrent creates', () => {
  test('many streams created at once are each 201', async ({ assert, cleanup }) => {
    const { sink } = await setupSink()
    const handler = createDurableStreamsFetchHandler(sink, { basePath: '/ds' })
    const server = createServer(toNode(handler))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanup(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds/v1/stream`
    const statuses: Record<number, number> = {}
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          fetch(`${root}/many/${round}-${index}`, {
            method: 'PUT',
            headers: { 'content-type': 'text/plain' },
            body: 'x',
          }).then(async (response) => {
            await response.arrayBuffer()
            return response.status
          })
        )
      )
      for (const status of answers) statuses[status] = (statuses[status] ?? 0) + 1
    }
    assert.deepEqual(statuses, { 201: 100 })
  }).timeout(60_000)

  test("new producers' first appends to different streams at once are each 200", async ({
    assert,
    cleanup,
  }) => {
    const { sink } = await setupSink()
    const handler = createDurableStreamsFetchHandler(sink, { basePath: '/ds' })
    const server = createServer(toNode(handler))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanup(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds/v1/stream`
    const paths = Array.from({ length: 100 }, (_, index) => `${root}/producers/${index}`)
    for (const path of paths) {
      const created = await fetch(path, {
        method: 'PUT',
        headers: { 'content-type': 'text/plain' },
      })
      assert.equal(created.status, 201)
    }
    const statuses: Record<number, number> = {}
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        paths.slice(round * 20, round * 20 + 20).map((path) =>
          fetch(path, {
            method: 'POST',
            headers: {
              'content-type': 'text/plain',
              'producer-id': 'p',
              'producer-epoch': '0',
              'producer-seq': '0',
            },
            body: 'x',
          }).then(async (response) => {
            await response.arrayBuffer()
            return response.status
          })
        )
      )
      for (const status of answers) statuses[status] = (statuses[status] ?? 0) + 1
    }
    assert.deepEqual(statuses, { 200: 100 })
  }).timeout(60_000)
})

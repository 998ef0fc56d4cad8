import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * Creates of different streams at once never fail one another: on MariaDB a create's clean-up of
 * a path's leftover rows locked the gap where other new streams' rows go (a deadlock, 503).
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
})

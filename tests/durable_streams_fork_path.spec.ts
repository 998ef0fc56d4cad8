import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * `Stream-Forked-From` is "the path component of the source stream's URL" (PROTOCOL.md 4.2): a
 * door mounted under a prefix (`/ds`) takes the source's whole URL path (percent-encoded as in
 * its URL), as well as the path under the door; another principal's source stays a 404.
 */

test.group('Durable Streams door: fork source path', () => {
  test("a fork names its source by its URL's path, under the door's mount, encoded or not", async ({
    assert,
    cleanup,
  }) => {
    const { sink } = await setupSink()
    const handler = createDurableStreamsFetchHandler(sink, {
      basePath: '/ds',
      principal: (request) => {
        const user = request.headers.get('x-user')
        return user ? { id: user } : null
      },
    })
    const server = createServer(toNode(handler))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanup(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const as = (user: string, headers: Record<string, string> = {}) => ({
      'content-type': 'text/plain',
      'x-user': user,
      ...headers,
    })
    const source = `${origin}/ds/v1/stream/docs/a%20b`
    const created = await fetch(source, { method: 'PUT', headers: as('alice'), body: 'hello' })
    assert.equal(created.status, 201)
    const forks: Record<string, number> = {}
    for (const [name, from] of [
      ['url-path', '/ds/v1/stream/docs/a%20b'],
      ['door-path', '/v1/stream/docs/a b'],
    ]) {
      const fork = await fetch(`${origin}/ds/v1/stream/forks/${name}`, {
        method: 'PUT',
        headers: as('alice', { 'stream-forked-from': from }),
      })
      forks[name] = fork.status
      await fork.arrayBuffer()
      if (fork.status !== 201) continue
      const read = await fetch(`${origin}/ds/v1/stream/forks/${name}?offset=-1`, {
        headers: as('alice'),
      })
      assert.equal(await read.text(), 'hello')
    }
    assert.deepEqual(forks, { 'url-path': 201, 'door-path': 201 })
    // Bob names Alice's stream the same way: no such source.
    const stolen = await fetch(`${origin}/ds/v1/stream/forks/bob`, {
      method: 'PUT',
      headers: as('bob', { 'stream-forked-from': '/ds/v1/stream/docs/a%20b' }),
    })
    assert.equal(stolen.status, 404)
  })
})

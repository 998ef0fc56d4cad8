/**
 * This package's Durable Streams door for the bench (bench/ds_section.ts): a sink on fresh
 * tables of `process.env.DB`, `createDurableStreamsFetchHandler` on a bare `node:http` server
 * on loopback (the few lines of adapter a host writes: tests/helpers/fetch_node.ts), a stream at
 * `/ds/v1/stream/<name>`. Every request carries the principal `bench` (`x-user`): the door's
 * default rule, a stream is its creator's, is in every measurement.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { createDatabase, resetTables } from '../tests/helpers/db.js'
import { toNode } from '../tests/helpers/fetch_node.js'
import type { DsTarget } from './durable_streams.js'

export async function servePackage(): Promise<{ target: DsTarget; close: () => Promise<void> }> {
  const db = createDatabase()
  await resetTables(db)
  const sink = new LucidTokenStreamSink(db, {})
  const handler = createDurableStreamsFetchHandler(sink, {
    basePath: '/ds',
    principal: (request) => {
      const user = request.headers.get('x-user')
      return user ? { id: user } : null
    },
    anonymous: false,
  })
  const server = createServer(toNode(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds`
  return {
    target: {
      label: 'package',
      streamUrl: (name) => `${url}/v1/stream/${name}`,
      headers: { 'x-user': 'bench' },
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await sink.shutdown()
      await db.manager.closeAll()
    },
  }
}

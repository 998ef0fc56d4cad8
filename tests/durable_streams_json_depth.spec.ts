import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from '@japa/runner'
import { createDurableStreamsFetchHandler } from '../src/http/durable_streams_fetch_handler.js'
import { setupSink } from './helpers/sink.js'
import { snapshotTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'

/**
 * A JSON-mode stream takes the package's depth rule like every other body: a body nested
 * deeper (past what `JSON.stringify` can walk) is 400 with `{ code, message }`, nothing written,
 * on create and on append; the server answers the next request.
 */

test.group('Durable Streams door: JSON depth', () => {
  test('a deeply nested JSON body is 400 on create and append and writes nothing', async ({
    assert,
    cleanup,
  }) => {
    const { db, sink } = await setupSink()
    const handler = createDurableStreamsFetchHandler(sink, { basePath: '/ds' })
    const server = createServer(toNode(handler))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanup(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds/v1/stream`
    const json = { 'content-type': 'application/json' }
    assert.equal(
      (await fetch(`${base}/deep`, { method: 'PUT', headers: json, body: '[{"a":1}]' })).status,
      201
    )
    const deep = '['.repeat(200_000) + ']'.repeat(200_000)
    const before = await snapshotTables(db)
    for (const [method, url] of [
      ['PUT', `${base}/deep-new`],
      ['POST', `${base}/deep`],
    ]) {
      const response = await fetch(url, { method, headers: json, body: deep })
      assert.equal(response.status, 400, `${method}`)
      const body = (await response.json()) as { code: string; message: string }
      assert.isString(body.code)
      assert.isString(body.message)
    }
    assert.equal(await snapshotTables(db), before)
    const read = await fetch(`${base}/deep?offset=-1`)
    assert.deepEqual(await read.json(), [{ a: 1 }])
  })
})

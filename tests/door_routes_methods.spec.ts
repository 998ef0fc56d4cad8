import { test } from '@japa/runner'
import { matchPath, type DoorRequest, type DoorRouteTable } from '../src/http/door_routes.js'
import { createDoorFetchHandler } from '../src/http/fetch_adapter.js'

/**
 * The route tables' newer features on the Fetch adapter (the AdonisJS adapter is driven through
 * them by the Durable Streams conformance suite, `DS_TRANSPORT=adonis`): every method, a HEAD
 * answered by the GET route, a trailing `*` segment, raw bodies under the table's cap.
 */

test.group('Door routes: a trailing * segment', () => {
  test('matches one or more segments, each decoded, joined with /', ({ assert }) => {
    assert.deepEqual(matchPath('/v1/stream/*', '/v1/stream/a'), { '*': 'a' })
    assert.deepEqual(matchPath('/v1/stream/*', '/v1/stream/a/b%20c'), { '*': 'a/b c' })
    assert.deepEqual(matchPath('/s/:id/*', '/s/x/y/z'), { 'id': 'x', '*': 'y/z' })
    assert.isNull(matchPath('/v1/stream/*', '/v1/stream'))
    assert.isNull(matchPath('/v1/stream/*', '/v1/stream/a//b'))
    assert.isNull(matchPath('/v1/stream/*', '/v1/stream/%zz'))
    assert.isNull(matchPath('/v1/stream/*', '/v2/stream/a'))
    assert.deepEqual(matchPath('/runs/:runId', '/runs/r1'), { runId: 'r1' })
    assert.isNull(matchPath('/runs/:runId', '/runs/r1/more'))
  })
})

test.group('Door routes: methods and raw bodies (Fetch adapter)', () => {
  function toyHandler() {
    const asked: DoorRequest[] = []
    const answer = async (request: DoorRequest) => {
      asked.push(request)
      return {
        kind: 'raw' as const,
        status: 200,
        headers: { 'x-method': request.method, 'content-type': 'text/plain' },
        body: `${request.method} ${request.params['*']} ${request.bytes?.byteLength ?? '-'}`,
      }
    }
    const table: DoorRouteTable = {
      routes: (['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS'] as const).map((method) => ({
        method,
        path: '/things/*',
        name: `things.${method}`,
        ...(method === 'PUT' || method === 'POST' ? { body: 'bytes' as const } : {}),
        answer,
      })),
      maxBodyBytes: 8,
      cancel: () => {},
    }
    return { asked, handle: createDoorFetchHandler([table], { basePath: '/api' }) }
  }

  test('each method reaches its route; a HEAD is the GET route without its body', async ({
    assert,
  }) => {
    const { asked, handle } = toyHandler()
    const at = (method: string, body?: string) =>
      handle(new Request('http://x/api/things/a/b', { method, body }))
    for (const method of ['GET', 'DELETE', 'OPTIONS']) {
      const response = await at(method)
      assert.equal(response.status, 200)
      assert.equal(await response.text(), `${method} a/b -`)
    }
    const head = await at('HEAD')
    assert.equal(head.status, 200)
    assert.equal(head.headers.get('x-method'), 'HEAD')
    assert.equal(await head.text(), '')
    assert.equal(asked.at(-1)?.method, 'HEAD')
    const put = await at('PUT', 'bytes!')
    assert.equal(await put.text(), 'PUT a/b 6')
    assert.deepEqual([...asked.at(-1)!.bytes!], [...new TextEncoder().encode('bytes!')])
    assert.equal(asked.at(-1)?.url, 'http://x/api/things/a/b')
    assert.equal((await at('PATCH', 'x')).status, 405)
  })

  test('a raw body over the cap is 413 and the route never runs', async ({ assert }) => {
    const { asked, handle } = toyHandler()
    const response = await handle(
      new Request('http://x/api/things/a', { method: 'POST', body: 'more than eight bytes' })
    )
    assert.equal(response.status, 413)
    assert.equal(((await response.json()) as { code: string }).code, 'body_too_large')
    assert.lengthOf(asked, 0)
    const empty = await handle(new Request('http://x/api/things/a', { method: 'POST' }))
    assert.equal(await empty.text(), 'POST a 0')
  })
})

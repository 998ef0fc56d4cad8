import { test } from '@japa/runner'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { serveApp } from './helpers/http.js'

/**
 * A refusal before the body is read (413 for a declared length past the cap, 415, 401) reaches
 * a client that is still sending a large body, on both transports: the server discards what it
 * will not read (up to `DEFAULTS.discardBodyBytes`) instead of closing a connection with unread
 * bytes in it, which resets it and may lose the answer. A real client (`fetch`), bodies of 2 to
 * 32 MiB, every one answered with its `{ code, message }`, none with a reset.
 */

const MiB = 1024 * 1024

async function servers(cleanup: (fn: () => Promise<void>) => void) {
  const fetchSide = await serveRuntime(
    { runner: scriptedAgent({ steps: ['read'] }) },
    (runtime, principal) => {
      const agui = createAgUiFetchHandler(runtime.door, { principal, basePath: '/agui' })
      const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal, anonymous: false })
      return (request) => (new URL(request.url).pathname.startsWith('/agui') ? agui : chat)(request)
    }
  )
  cleanup(fetchSide.close)
  const adonis = await serveApp({ runner: scriptedAgent({ steps: ['read'] }) })
  await resetTables(await adonis.app.container.make('lucid.db'))
  return { fetch: fetchSide.url, adonis: adonis.url }
}

/** POST `size` bytes of JSON; what came back: `status code`, or the client's error. */
async function send(url: string, size: number, headers: Record<string, string>, chunked = false) {
  const text = `{"pad":"${'x'.repeat(size)}"}`
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: chunked ? new Blob([text]).stream() : text,
      ...(chunked ? { duplex: 'half' } : {}),
    } as RequestInit)
    const body = (await response.json()) as { code: string; message: string }
    return `${response.status} ${body.code}`
  } catch (error) {
    return `error ${(error as { cause?: { code?: string } }).cause?.code ?? error}`
  }
}

test.group('A refusal reaches a client still sending a large body', () => {
  test('413 for a declared length past the cap, on both doors of both transports', async ({
    assert,
    cleanup,
  }) => {
    const urls = await servers(cleanup)
    const json = { 'content-type': 'application/json', 'x-user': 'alice' }
    for (const transport of ['fetch', 'adonis'] as const) {
      for (const path of ['/agui', '/chat']) {
        const answers: string[] = []
        for (const size of [2, 8, 32, 2, 8, 32]) {
          answers.push(await send(`${urls[transport]}${path}`, size * MiB, json))
        }
        assert.deepEqual(
          answers,
          answers.map(() => '413 body_too_large'),
          `${transport} ${path}`
        )
      }
    }
  }).timeout(120_000)

  test('a body sent without a length, past the cap: 413 as the bytes pass it', async ({
    assert,
    cleanup,
  }) => {
    const urls = await servers(cleanup)
    const json = { 'content-type': 'application/json', 'x-user': 'alice' }
    for (const transport of ['fetch', 'adonis'] as const) {
      for (const size of [2, 8, 32]) {
        assert.equal(
          await send(`${urls[transport]}/agui`, size * MiB, json, true),
          '413 body_too_large',
          `${transport} ${size} MiB`
        )
      }
    }
  }).timeout(120_000)

  test('refused before the body for another rule (415, 401): the answer arrives too', async ({
    assert,
    cleanup,
  }) => {
    const urls = await servers(cleanup)
    for (const transport of ['fetch', 'adonis'] as const) {
      for (const size of [8, 32]) {
        const plain = { 'content-type': 'text/plain', 'x-user': 'alice' }
        assert.equal(
          await send(`${urls[transport]}/agui`, size * MiB, plain),
          '415 unsupported_media_type',
          transport
        )
      }
    }
    // The useChat handler here takes nobody (`anonymous: false`): 401 before the body.
    const nobody = { 'content-type': 'application/json' }
    for (const size of [8, 32]) {
      assert.equal(await send(`${urls.fetch}/chat`, size * MiB, nobody), '401 unauthenticated')
    }
  }).timeout(120_000)
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { readDurable } from './helpers/durable_read.js'
import {
  gatedAgent,
  lastAssistant,
  noError,
  openPage,
  send,
  resumed,
  textOf,
} from './helpers/usechat_page.js'

/**
 * `useChat` in Chromium through `@durable-streams/aisdk-transport`
 * (`createDurableChatTransport({ api: '/ds/chat' })`, the demo's page with `data-durable-api`):
 * each answer is a Durable Stream of UI message chunks the transport reads with live SSE until
 * `Stream-Closed`, a reload reconnects through `GET /ds/chat/:chatId/stream`.
 */
test.group('useChat in Chromium through the Durable Streams transport', () => {
  test('a streamed answer, a reload mid-answer, an approval from the page', async ({
    assert,
    cleanup,
  }) => {
    let open = () => {}
    const gate = new Promise<void>((resolve) => (open = resolve))
    const { page, errors, served } = await openPage(gatedAgent(gate), { durableApi: '/ds/chat' })
    cleanup(() => open())
    // What the transport asked and was answered: a Location per POST and per reconnect, and
    // the streams it then read.
    const answers: { method: string; path: string; status: number; location: string | null }[] = []
    page.on('response', (response) => {
      const url = new URL(response.url())
      if (!url.pathname.startsWith('/ds/')) return
      answers.push({
        method: response.request().method(),
        path: url.pathname,
        status: response.status(),
        location: response.headers()['location'] ?? null,
      })
    })
    await send(page, 'Send the weekly report')
    await lastAssistant(page).locator('.text', { hasText: 'Revenue' }).waitFor()
    const id = await lastAssistant(page).getAttribute('data-id')
    // A reload mid-answer: the transport reconnects (`GET /ds/chat/:id/stream` names the turn's
    // stream) and replays it; no text twice, none lost.
    await page.reload()
    await resumed(page, 'Revenue')
    assert.equal(await textOf(page), 'Revenue ')
    open()
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    assert.equal(await lastAssistant(page).getAttribute('data-id'), id)
    assert.equal(await textOf(page), 'Revenue was 42. ')
    assert.lengthOf(await page.locator('.assistant').all(), 1)
    // The approval, from the page: the transport POSTs the answer, reads the continuation.
    await page.getByRole('button', { name: 'Approve' }).click()
    await lastAssistant(page).locator('.text', { hasText: 'All done.' }).waitFor()
    assert.equal(await textOf(page), 'Revenue was 42. Sent. All done.')
    assert.lengthOf(
      await lastAssistant(page).locator('.tool[data-state=output-available]').all(),
      2
    )
    await noError(assert, page, errors)

    const posts = answers.filter((a) => a.method === 'POST' && a.path === '/ds/chat')
    assert.lengthOf(posts, 2)
    for (const post of posts) {
      assert.equal(post.status, 201)
      assert.match(post.location!, /^runs\/[^/]+\/ui-message\/segments\/[0-9._]+\/[0-9]+$/)
    }
    // The page's first load: no turn to reconnect to (204); the reload: the turn in flight.
    const reconnects = answers.filter((a) => a.path.endsWith('/stream'))
    assert.deepEqual(
      reconnects.map((a) => a.status),
      [204, 200]
    )
    assert.match(reconnects[1].location!, /^\.\.\/\.\.\/runs\//)
    // Every stream it read was a Durable Stream read (live SSE) of the turn's run.
    const reads = answers.filter((a) => a.method === 'GET' && a.path.includes('/segments/'))
    assert.isAtLeast(reads.length, 3)
    assert.isTrue(reads.every((read) => read.path.startsWith(`/ds/runs/${id}/`)))

    // The run goes on without its POST's reader: nobody reads the answer of this one, the
    // turn still runs to its park, where the stream it names closes with the door's `finish`.
    const chatId = `chat-${randomUUID()}`
    const response = await fetch(`${served.url}/ds/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify({
        id: chatId,
        messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'again' }] }],
        trigger: 'submit-message',
      }),
    })
    assert.equal(response.status, 201)
    const { streamUrl } = (await response.json()) as { streamUrl: string }
    assert.equal(response.headers.get('location'), streamUrl)
    const [item] = await waitFor(async () => {
      const streamRunId = streamUrl.split('/')[1]
      const pending = await served.agentStream.parking.queries.pendingOf(streamRunId)
      return pending.length > 0 ? pending : null
    })
    assert.equal(item.toolName, 'send_email')
    const segment = await readDurable(new URL(streamUrl, `${served.url}/ds/chat`).toString(), {
      live: 'sse',
      offset: '-1',
    })
    assert.isTrue(segment.closed)
    assert.deepEqual(segment.items.at(-1), { type: 'finish', finishReason: 'tool-calls' })
    assert.equal((segment.items[0] as { type: string }).type, 'start')
  }).timeout(90_000)
})

/** `check()` once it gives something (polled: the run goes on on its own). */
async function waitFor<T>(check: () => Promise<T | null>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms
  while (true) {
    const found = await check()
    if (found !== null) return found
    if (Date.now() > deadline) throw new Error('timed out waiting for the run to park')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

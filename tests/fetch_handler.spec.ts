import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { createRuntime } from '../src/runtime.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { assertConforms, parseSse, recordingFetch } from './helpers/agui.js'

/** The AG-UI door's Fetch handler on a bare `node:http` server (see `serveRuntime`). */
function serveBare() {
  return serveRuntime(
    { runner: scriptedAgent({ steps: ['read', 'approval'] }) },
    (runtime, principal) => createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
  )
}

test.group('AG-UI door outside AdonisJS: the Fetch-API handler on node:http', () => {
  test('HttpAgent runs, approves with buildResumeArray and re-attaches; refusals are JSON', async ({
    assert,
    cleanup,
  }) => {
    const { url, close } = await serveBare()
    cleanup(close)
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
    })
    await client.runAgent()
    const first = recorder.events()
    await assertConforms(assert, first)
    assert.lengthOf(client.pendingInterrupts, 1)
    const [interrupt] = client.pendingInterrupts
    assert.equal(interrupt.reason, 'tool_call')
    const runId = first[0].runId as string

    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    const second = recorder.events()
    await assertConforms(assert, second)
    assert.deepEqual(second.at(-1)!.outcome, { type: 'success' })

    // Re-attach to the first run from its third event's id: exactly what followed.
    const ids = parseSse(recorder.bodies[0]).filter((item) => item.id)
    const cursor = ids[1].id!
    const again = await fetch(`${url}/agui/runs/${runId}`, {
      headers: { 'x-user': 'alice', 'last-event-id': cursor },
    })
    assert.equal(again.status, 200)
    assert.match(again.headers.get('content-type')!, /^text\/event-stream/)
    const replayed = parseSse(await again.text()).map((item) => item.event)
    await assertConforms(assert, replayed)
    assert.equal(replayed[0].type, 'RUN_STARTED')
    assert.equal(replayed.at(-1)!.type, 'RUN_FINISHED')

    // Someone else's run is missing; a form post starts nothing; an unknown path is 404.
    const foreign = await fetch(`${url}/agui/runs/${runId}`, { headers: { 'x-user': 'bob' } })
    assert.equal(foreign.status, 404)
    assert.equal(((await foreign.json()) as any).code, 'not_found')
    const form = await fetch(`${url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-user': 'alice' },
      body: '{}',
    })
    assert.equal(form.status, 415)
    assert.equal(((await form.json()) as any).code, 'unsupported_media_type')
    assert.equal((await fetch(`${url}/elsewhere`)).status, 404)
  })

  test('a body nobody reads gets nothing queued: no heartbeat piles up behind the events', async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    const runtime = createRuntime(db, { runner: scriptedAgent({ steps: ['read'] }) })
    cleanup(async () => {
      await runtime.driver.settled()
      await runtime.sink.shutdown()
      await db.manager.closeAll()
    })
    const handle = createAgUiFetchHandler(runtime.door, { heartbeatMs: 50 })
    const threadId = `thread-${randomUUID()}`
    const runId = `run-${randomUUID()}`
    const started = await handle(
      new Request('http://x/', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          threadId,
          runId,
          messages: [{ id: 'u', role: 'user', content: 'go' }],
          tools: [],
          context: [],
        }),
      })
    )
    await started.text()
    const response = await handle(new Request(`http://x/runs/${runId}`))
    assert.equal(response.status, 200)
    // Not read for a second (twenty heartbeats), then read to the end.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const decoder = new TextDecoder()
    let pings = 0
    let events = 0
    let chunks = 0
    // The events ready at once come in one chunk (one socket write): counted by their blocks.
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      chunks++
      for (const block of decoder.decode(chunk).split('\n\n')) {
        if (block === ': ping') pings++
        else if (block.includes('data:')) events++
      }
    }
    assert.isAbove(events, 3)
    assert.isAtMost(pings, 2)
    assert.isBelow(chunks, events)
  })

  test('anonymous: false: nobody gets 401 unauthenticated on both handlers, nothing starts', async ({
    assert,
    cleanup,
  }) => {
    const { url, close } = await serveRuntime(
      { runner: scriptedAgent({ steps: ['read'] }) },
      (served, principal) => {
        const agui = createAgUiFetchHandler(served.door, {
          basePath: '/agui',
          principal,
          anonymous: false,
        })
        const chat = createUiMessageFetchHandler(served.uiMessage, { principal, anonymous: false })
        return (request) =>
          (new URL(request.url).pathname.startsWith('/agui') ? agui : chat)(request)
      }
    )
    cleanup(close)
    const routes: [string, string][] = [
      ['POST', '/agui'],
      ['GET', '/agui/runs/r1'],
      ['GET', '/agui/threads/t1'],
      ['POST', '/chat'],
      ['GET', '/chat/c1/stream'],
    ]
    const body = JSON.stringify({ threadId: 't1', runId: 'r1', messages: [] })
    for (const [method, path] of routes) {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'POST' ? body : undefined,
      })
      assert.equal(response.status, 401, path)
      assert.deepEqual(await response.json(), {
        code: 'unauthenticated',
        message: 'Sign in to use this route',
      })
    }
    // Someone is served as before, and the refused POST started nothing: no thread t1.
    const ok = await fetch(`${url}/agui/threads/t1`, { headers: { 'x-user': 'alice' } })
    assert.equal(ok.status, 404)
  })
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { scriptedAgent, type ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { serveApp } from './helpers/http.js'
import type { LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import type { RunDriver } from '../src/runner/driver.js'
import type { DoorRunStore } from '../src/store/door_runs.js'

/**
 * Every transport option on every door, on both transports (the AdonisJS routes and the
 * Fetch-API handlers): the one adapter per transport serves both doors' route tables alike.
 */

type Transport = 'adonis' | 'fetch'
type DoorName = 'agui' | 'chat'

interface TransportOptions {
  steps?: ScriptedAgentOptions['steps']
  tokensPerSecond?: number
  abortOnDisconnect?: boolean
  heartbeatMs?: number
  maxBodyBytes?: number
}

interface Served {
  url: string
  driver: RunDriver
  sink: LucidTokenStreamSink
  runs: DoorRunStore
}

/** Both doors on one transport, `x-user` the principal; the options as that transport takes them. */
async function serve(
  transport: Transport,
  options: TransportOptions,
  cleanup: (fn: () => Promise<void>) => void
): Promise<Served> {
  const runner = scriptedAgent({
    steps: options.steps ?? ['read'],
    tokensPerSecond: options.tokensPerSecond,
  })
  const agui = { abortOnDisconnect: options.abortOnDisconnect, maxBodyBytes: options.maxBodyBytes }
  if (transport === 'adonis') {
    const served = await serveApp({
      runner,
      agui: {
        ...agui,
        ...(options.heartbeatMs ? { heartbeat: `${options.heartbeatMs}ms` } : {}),
      },
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const { agentStream } = served
    return {
      url: served.url,
      driver: agentStream.driver,
      sink: agentStream.sink,
      runs: agentStream.door.runs,
    }
  }
  const { url, runtime, close } = await serveRuntime({ runner, agui }, (served, principal) => {
    const shared = { principal, heartbeatMs: options.heartbeatMs }
    const ag = createAgUiFetchHandler(served.door, { ...shared, basePath: '/agui' })
    const chat = createUiMessageFetchHandler(served.uiMessage, {
      ...shared,
      abortOnDisconnect: options.abortOnDisconnect,
    })
    return (request) => (new URL(request.url).pathname.startsWith('/agui') ? ag : chat)(request)
  })
  cleanup(close)
  return { url, driver: runtime.driver, sink: runtime.sink, runs: runtime.door.runs }
}

/** What a door is asked on the routes (the paths as both transports mount them). */
const doors: Record<
  DoorName,
  {
    post: string
    body: (threadId: string, text?: string) => unknown
    list: string
    listed: (json: any) => string[]
  }
> = {
  agui: {
    post: '/agui',
    body: (threadId, text = 'go') => ({
      threadId,
      runId: randomUUID(),
      messages: [{ id: 'u', role: 'user', content: text }],
    }),
    list: '/agui/threads',
    listed: (json) => json.threads.map((thread: any) => thread.threadId),
  },
  chat: {
    post: '/chat',
    body: (chatId, text = 'go') => ({
      id: chatId,
      messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text }] }],
      trigger: 'submit-message',
    }),
    list: '/chat',
    listed: (json) => json.chats.map((chat: any) => chat.chatId),
  },
}

const post = (url: string, body: unknown, init: RequestInit & { user?: string } = {}) =>
  fetch(url, {
    method: 'POST',
    ...init,
    headers: { 'content-type': 'application/json', 'x-user': init.user ?? 'alice' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

/** Whether the thread's newest stream ended cancelled (its stored frames say so). */
async function endedCancelled(served: Served, threadId: string) {
  const run = await served.runs.latest(threadId)
  if (!run) throw new Error(`no run on ${threadId}`)
  for await (const frame of served.sink.replay(run.streamRunId)) {
    const event = (frame as { t?: string; event?: { kind?: string } }).event
    if ((frame as { t?: string }).t === 'event' && event?.kind === 'cancelled') return true
  }
  return false
}

const cases: [Transport, DoorName][] = [
  ['adonis', 'agui'],
  ['adonis', 'chat'],
  ['fetch', 'agui'],
  ['fetch', 'chat'],
]

test.group('Transport options on every door, both transports', () => {
  for (const [transport, door] of cases) {
    for (const abortOnDisconnect of [true, false]) {
      test(`${transport} / ${door}: a POST whose client goes away ${abortOnDisconnect ? 'cancels the run (abortOnDisconnect)' : 'leaves the run going'}`, async ({
        assert,
        cleanup,
      }) => {
        const served = await serve(
          transport,
          { steps: ['reasoning', 'read'], tokensPerSecond: 100, abortOnDisconnect },
          cleanup
        )
        const threadId = `t-${randomUUID()}`
        const client = new AbortController()
        const response = await post(
          `${served.url}${doors[door].post}`,
          doors[door].body(threadId),
          {
            signal: client.signal,
          }
        )
        assert.equal(response.status, 200)
        // A few events in, the client goes away.
        const reader = response.body!.getReader()
        let text = ''
        while ((text.match(/\n\n/g) ?? []).length < 4) {
          const { value, done } = await reader.read()
          if (done) break
          text += new TextDecoder().decode(value)
        }
        client.abort()
        await reader.cancel().catch(() => {})
        await new Promise((resolve) => setTimeout(resolve, 50))
        await served.driver.settled()
        assert.equal(await endedCancelled(served, threadId), abortOnDisconnect)
      }).timeout(20_000)
    }

    test(`${transport} / ${door}: heartbeatMs pings an idle stream`, async ({
      assert,
      cleanup,
    }) => {
      const served = await serve(
        transport,
        { steps: ['read'], tokensPerSecond: 8, heartbeatMs: 40 },
        cleanup
      )
      const threadId = `t-${randomUUID()}`
      const response = await post(`${served.url}${doors[door].post}`, doors[door].body(threadId))
      assert.equal(response.status, 200)
      const reader = response.body!.getReader()
      let text = ''
      const deadline = Date.now() + 5000
      while (!text.includes(': ping\n\n') && Date.now() < deadline) {
        const { value, done } = await reader.read()
        if (done) break
        text += new TextDecoder().decode(value)
      }
      await reader.cancel().catch(() => {})
      assert.include(text, ': ping\n\n')
      await served.driver.settled()
    }).timeout(20_000)

    test(`${transport} / ${door}: a body over maxBodyBytes is 413 body_too_large, a form 415, nothing starts`, async ({
      assert,
      cleanup,
    }) => {
      const served = await serve(transport, { maxBodyBytes: 2048 }, cleanup)
      const threadId = `t-${randomUUID()}`
      const big = await post(
        `${served.url}${doors[door].post}`,
        doors[door].body(threadId, 'x'.repeat(4000))
      )
      assert.equal(big.status, 413)
      assert.deepEqual(await big.json(), {
        code: 'body_too_large',
        message: 'The body exceeds 2048 bytes',
      })
      // The bytes received count, not the body re-serialized: whitespace past the cap is over it.
      const padded = `${JSON.stringify(doors[door].body(threadId))}${' '.repeat(3000)}`
      const spaced = await post(`${served.url}${doors[door].post}`, padded)
      assert.equal(spaced.status, 413)
      assert.equal(((await spaced.json()) as any).code, 'body_too_large')
      // Sent without a length (chunked): the bytes received count as well.
      const chunked = await fetch(`${served.url}${doors[door].post}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'alice' },
        body: new Blob([padded]).stream(),
        duplex: 'half',
      } as RequestInit)
      assert.equal(chunked.status, 413)
      assert.equal(((await chunked.json()) as any).code, 'body_too_large')
      const form = await fetch(`${served.url}${doors[door].post}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-user': 'alice' },
        body: JSON.stringify(doors[door].body(threadId)),
      })
      assert.equal(form.status, 415)
      assert.equal(((await form.json()) as any).code, 'unsupported_media_type')
      assert.isNull(await served.runs.latest(threadId))
    }).timeout(20_000)

    test(`${transport} / ${door}: the principal owns what it starts; nobody gets no list`, async ({
      assert,
      cleanup,
    }) => {
      const served = await serve(transport, {}, cleanup)
      const threadId = `t-${randomUUID()}`
      await (await post(`${served.url}${doors[door].post}`, doors[door].body(threadId))).text()
      await served.driver.settled()
      const listOf = async (user?: string) =>
        fetch(`${served.url}${doors[door].list}`, { headers: user ? { 'x-user': user } : {} })
      const alice = await listOf('alice')
      assert.equal(alice.status, 200)
      assert.deepEqual(doors[door].listed(await alice.json()), [threadId])
      const bob = await listOf('bob')
      assert.deepEqual(doors[door].listed(await bob.json()), [])
      const nobody = await listOf()
      assert.equal(nobody.status, 401)
      assert.equal(((await nobody.json()) as any).code, 'unauthenticated')
      // Bob posting to Alice's thread: hers is missing for him.
      const theirs = await post(`${served.url}${doors[door].post}`, doors[door].body(threadId), {
        user: 'bob',
      })
      assert.equal(theirs.status, 404)
      assert.equal(((await theirs.json()) as any).code, 'not_found')
    }).timeout(20_000)
  }
})

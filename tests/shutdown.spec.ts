import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { UIMessageChunk } from 'ai'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import { defineConfig } from '../src/define_config.js'
import { createRuntime } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { ReplicaShutdownError } from '../src/errors.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { readResponse, runInput, serveApp } from './helpers/http.js'
import { parseSse } from './helpers/agui.js'
import { headlessChat } from './helpers/ui_chat.js'
import { startDrainingReplica } from './helpers/draining_replica.js'

const REFUSED = {
  code: 'replica_shutdown',
  message: 'This server is shutting down: try again in a moment.',
}

async function setup() {
  const served = await serveApp({ runner: scriptedAgent({ steps: ['approval'] }) })
  await resetTables(await served.app.container.make('lucid.db'))
  return served
}

const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify(body),
  })

/** A user message of `useChat` (`DefaultChatTransport`'s body). */
const chatBody = (chatId: string, text: string) => ({
  id: chatId,
  messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text }] }],
  trigger: 'submit-message',
})

/** Every chunk of a UI message stream. */
async function chunksOf(stream: ReadableStream<UIMessageChunk>) {
  const chunks: UIMessageChunk[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

const textOfEvents = (events: { event: any }[]) =>
  events
    .filter(({ event }) => event.type === 'TEXT_MESSAGE_CONTENT')
    .map(({ event }) => event.delta)
    .join('')

const textOfChunks = (chunks: UIMessageChunk[]) =>
  chunks.map((chunk) => (chunk.type === 'text-delta' ? chunk.delta : '')).join('')

test.group('Graceful shutdown: a replica drains on SIGTERM', () => {
  test('mid-answer: readers on it and on another replica get every stored frame, then replica_shutdown', async ({
    assert,
  }) => {
    const other = await setup()
    const replica = await startDrainingReplica('200ms')
    const threadId = `t-${randomUUID()}`
    const runId = `r-${randomUUID()}`
    // The AG-UI door: the POST's own stream on the draining replica.
    const own = post(`${replica.url}/agui`, {
      ...runInput(threadId, runId),
      messages: [{ id: 'u', role: 'user', content: 'hold' }],
    }).then((response) => response.text())
    // The useChat door, through the AI SDK's transport.
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(replica.url, chatId)
    const chatOwn = chat.transport
      .sendMessages({
        chatId,
        messages: chatBody(chatId, 'hold').messages as any,
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      })
      .then(chunksOf)
    await replica.holding(2)
    // Readers on another replica: AG-UI re-attach, and useChat's resume of the active turn.
    const elsewhere = fetch(`${other.url}/agui/runs/${runId}`, {
      headers: { 'x-user': 'alice' },
    }).then((response) => response.text())
    const chatElsewhere = await headlessChat(other.url, chatId).transport.reconnectToStream({
      chatId,
    })
    assert.isNotNull(chatElsewhere)
    const chatElsewhereChunks = chunksOf(chatElsewhere!)

    replica.terminate()
    for (const body of [await own, await elsewhere]) {
      const events = parseSse(body)
      assert.equal(textOfEvents(events), 'Before the deploy. ')
      assert.deepEqual(events.at(-1)!.event, {
        type: 'RUN_ERROR',
        code: 'replica_shutdown',
        message: FAILURE_SENTENCES.replica_shutdown,
      })
      assert.equal(events[0].event.type, 'RUN_STARTED')
    }
    for (const chunks of [await chatOwn, await chatElsewhereChunks]) {
      assert.equal(textOfChunks(chunks), 'Before the deploy. ')
      const error = chunks.find((chunk) => chunk.type === 'error')
      assert.deepEqual(error, { type: 'error', errorText: FAILURE_SENTENCES.replica_shutdown })
    }
    assert.equal(await replica.exited, 0)
    // Stored as the run's end: a reader coming later is told the same.
    const head = await other.agentStream.sink.head(runId)
    assert.equal(head?.status, 'ended')
  }).timeout(60_000)

  test('during the drain: new runs and resumes get 503 with Retry-After, a decision is recorded and left for another replica, a run in flight finishes', async ({
    assert,
  }) => {
    const other = await setup()
    const replica = await startDrainingReplica('60s')
    // A run that parks on an approval, before the deploy.
    const parkedThread = `t-${randomUUID()}`
    const parkedRun = `p-${randomUUID()}`
    const parked = parseSse(
      await (await post(`${replica.url}/agui`, runInput(parkedThread, parkedRun))).text()
    )
    const finished = parked.at(-1)!.event
    assert.equal(finished.type, 'RUN_FINISHED')
    assert.equal(finished.outcome.type, 'interrupt')
    // A run in flight.
    const holdRun = `r-${randomUUID()}`
    const held = post(`${replica.url}/agui`, {
      ...runInput(`t-${randomUUID()}`, holdRun),
      messages: [{ id: 'u', role: 'user', content: 'hold' }],
    }).then((response) => response.text())
    await replica.holding(1)

    replica.terminate()
    await replica.draining()
    const refusals = [
      await post(`${replica.url}/agui`, runInput(`t-${randomUUID()}`, `r-${randomUUID()}`)),
      await post(`${replica.url}/agui`, {
        ...runInput(parkedThread, `r-${randomUUID()}`),
        resume: [
          { interruptId: finished.outcome.interrupts[0].id, status: 'resolved', payload: {} },
        ],
      }),
      await post(`${replica.url}/chat`, chatBody(`chat-${randomUUID()}`, 'hi')),
      await post(`${replica.url}/runs`, { message: 'hi' }),
    ]
    for (const response of refusals) {
      const answer = await readResponse(response)
      assert.equal(answer.status, 503)
      assert.equal(answer.headers.get('retry-after'), '1')
      assert.deepEqual(answer.json, REFUSED)
    }
    // A decision is still recorded there; the resume it unblocks is not claimed there.
    const decided = await post(`${replica.url}/items/${parkedRun}/${parkedRun}.call0/approve`, {})
    assert.equal(decided.status, 200)
    const { parking } = other.agentStream
    assert.equal((await parking.queries.streamAfter(parkedRun))?.suspension, 'parked')

    // The run in flight finishes normally within the drain time.
    replica.release()
    const events = parseSse(await held)
    assert.equal(textOfEvents(events), 'Before the deploy. After it.')
    assert.equal(events.at(-1)!.event.type, 'RUN_FINISHED')
    assert.notInclude(
      events.map(({ event }) => event.type),
      'RUN_ERROR'
    )
    assert.equal(await replica.exited, 0)

    // The parked run survived the deploy: another replica resumes it.
    assert.equal(await parking.sweeper.resumeReady(), 1)
    await other.agentStream.driver.settled()
    assert.equal((await other.agentStream.sink.head(parkedRun))?.status, 'ended')
    const frames = []
    for await (const frame of other.agentStream.sink.replay(parkedRun)) frames.push(frame)
    assert.isTrue(
      frames.some(
        (frame) =>
          frame.t === 'event' &&
          frame.event.kind === 'tool-output' &&
          frame.event.id === `${parkedRun}.call0`
      )
    )
  }).timeout(60_000)

  test('a claim that lands as the replica drains is given back, claimable at once', async ({
    assert,
  }) => {
    const served = await setup()
    const { driver, parking } = served.agentStream
    const runId = `p-${randomUUID()}`
    await (await post(`${served.url}/agui`, runInput(`t-${randomUUID()}`, runId))).text()
    await driver.drain(0)
    // Decided while draining: recorded, not claimed here.
    const [item] = await parking.queries.pendingOf(runId)
    await parking.decisions.approve(runId, item.itemId, { principal: { id: 'alice' }, via: 'api' })
    assert.equal((await parking.queries.streamAfter(runId))?.suspension, 'parked')
    // A claim that landed just before the drain began: the resume gives it back.
    const claimed = await driver.parkingStore.claims.claim(
      runId,
      item.park,
      driver.replicaId,
      30_000
    )
    assert.isNotNull(claimed)
    assert.isNull(await driver.resume(claimed!))
    assert.equal((await parking.queries.streamAfter(runId))?.suspension, 'parked')
    assert.deepEqual(await driver.parkingStore.claims.claimCandidates(10), [
      { runId, park: item.park },
    ])
  })

  test('createRuntime: close() drains (503 on both Fetch handlers, then replica_shutdown for a run that does not stop)', async ({
    assert,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    let started!: () => void
    const writing = new Promise<void>((resolve) => (started = resolve))
    const runner: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({ t: 'text', v: 'Partial answer.' })
        await ctx.writer.flush?.()
        started()
        // Never returns, and ignores its signal.
        return new Promise(() => {})
      },
      resume: async () => ({ status: 'finished' }),
    }
    const runtime = createRuntime(db, { runner, drainMs: 50 })
    const { runId } = await runtime.driver.start({ runId: `r-${randomUUID()}` })
    await writing
    const frames: any[] = []
    const reading = (async () => {
      for await (const frame of runtime.sink.subscribe(runId)) frames.push(frame)
    })()
    const closing = runtime.close()
    assert.isTrue(runtime.driver.draining)
    const agui = await createAgUiFetchHandler(runtime.door)(
      new Request('http://x/', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(runInput('t', 'r2')),
      })
    )
    const chat = await createUiMessageFetchHandler(runtime.uiMessage)(
      new Request('http://x/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chatBody('c', 'hi')),
      })
    )
    for (const response of [agui, chat]) {
      assert.equal(response.status, 503)
      assert.equal(response.headers.get('retry-after'), '1')
      assert.deepEqual(await response.json(), REFUSED)
    }
    await assert.rejects(() => runtime.driver.start({ runId: 'r3' }), ReplicaShutdownError)
    await closing
    await reading
    assert.deepEqual(
      frames.map(({ cursor: _, ...frame }) => frame),
      [
        { t: 'text', v: 'Partial answer.' },
        { t: 'error', code: 'replica_shutdown', message: FAILURE_SENTENCES.replica_shutdown },
      ]
    )
    await db.manager.closeAll()
  })

  test("shutdown ends the admin page's open event stream (it would run on for a minute)", async ({
    assert,
  }) => {
    const served = await setup()
    const headers = { 'x-admin': 'yes', 'x-user': 'alice' }
    const page = await fetch(`${served.url}/admin`, { headers })
    const cookie = page.headers
      .getSetCookie()
      .map((line) => line.split(';')[0])
      .join('; ')
    const events = await fetch(`${served.url}/admin/events`, { headers: { ...headers, cookie } })
    assert.equal(events.status, 200)
    const body = events.text()
    await served.agentStream.shutdown()
    // Ended: the body resolves (its queue events are the live queue's business).
    assert.match(await body, /^retry: 1000\n\n/)
  })

  test('shutdown.drain is a duration, validated', ({ assert }) => {
    assert.throws(
      () => defineConfig({ shutdown: { drain: 'soon' } }),
      'Invalid "config/agent_stream.ts": "shutdown.drain" must be a duration of at least 0 ms'
    )
    assert.doesNotThrow(() => defineConfig({ shutdown: { drain: '10s' } }))
  })
})

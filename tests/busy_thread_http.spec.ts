import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { DefaultChatTransport, type UIMessage, type UIMessageChunk } from 'ai'
import { serveDoors, TRANSPORTS } from './helpers/transports.js'
import { heldRunner } from './helpers/held_runner.js'
import { postJson, readResponse, runInput } from './helpers/http.js'
import { assertConforms, recordingFetch } from './helpers/agui.js'
import { queued, rowsOf } from './helpers/busy_thread.js'
import { tableNames } from '../src/store/schema.js'

/**
 * The busy-thread policy ("double texting", `multitaskStrategy`) on both doors over both
 * transports, with the official clients: `HttpAgent` and the AI SDK's `DefaultChatTransport`.
 */

const tables = tableNames()

const agentOn = (url: string, threadId: string, content: string, fetch?: any) =>
  new HttpAgent({
    url: `${url}/agui`,
    threadId,
    headers: { 'x-user': 'alice' },
    ...(fetch ? { fetch } : {}),
    initialMessages: [{ id: `u-${randomUUID()}`, role: 'user', content }],
  })

function chatTransport(url: string, body?: Record<string, unknown>) {
  return new DefaultChatTransport<UIMessage>({
    api: `${url}/chat`,
    headers: { 'x-user': 'alice' },
    ...(body ? { body } : {}),
  })
}

const userMessage = (text: string): UIMessage => ({
  id: `u-${randomUUID()}`,
  role: 'user',
  parts: [{ type: 'text', text }],
})

async function chunksOf(stream: ReadableStream<UIMessageChunk>) {
  const chunks: UIMessageChunk[] = []
  for await (const chunk of stream as unknown as AsyncIterable<UIMessageChunk>) chunks.push(chunk)
  return chunks
}

const textOf = (chunks: UIMessageChunk[]) =>
  chunks.map((c) => (c.type === 'text-delta' ? c.delta : '')).join('')

for (const transport of TRANSPORTS) {
  test.group(`Busy thread policy (${transport})`, () => {
    test('reject (AG-UI default): 409 thread_busy naming the running run, nothing written', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(close)
      const threadId = `thread-${randomUUID()}`
      const runA = `run-${randomUUID()}`
      const first = agentOn(url, threadId, 'hold A').runAgent({ runId: runA })
      await held.started('hold A')
      const before = await rowsOf(db)

      // The door's default (no policy asked), and `reject` asked.
      for (const forwardedProps of [undefined, { multitaskStrategy: 'reject' }]) {
        const body = runInput(
          threadId,
          `run-${randomUUID()}`,
          forwardedProps ? { forwardedProps } : {}
        )
        const refused = await readResponse(await postJson(`${url}/agui`, body))
        assert.equal(refused.status, 409)
        assert.equal(refused.json.code, 'thread_busy')
        assert.equal(refused.json.runId, runA)
        assert.isString(refused.json.message)
      }
      // The official client is refused too (it logs the refusal: kept off the test's output).
      const log = console.error
      console.error = () => {}
      const error: any = await agentOn(url, threadId, 'B')
        .runAgent()
        .then(
          () => null,
          (e: unknown) => e
        )
        .finally(() => (console.error = log))
      assert.equal(error?.status, 409)
      assert.equal(error.payload.code, 'thread_busy')
      assert.equal(error.payload.runId, runA)
      assert.equal(await rowsOf(db), before)

      held.release('hold A')
      await first
      assert.deepEqual(held.log, ['start:hold A', 'end:hold A'])
    })

    test('reject on the useChat door (DefaultChatTransport({ body })): 409 thread_busy, nothing written', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(close)
      const chatId = `chat-${randomUUID()}`
      const sent = chatTransport(url).sendMessages({
        chatId,
        messages: [userMessage('hold A')],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      })
      const firstChunks = sent.then(chunksOf)
      await held.started('hold A')
      const turn = await db.connection().from(tables.aguiRuns).where('thread_id', chatId).first()
      const before = await rowsOf(db)
      const error: any = await chatTransport(url, { multitaskStrategy: 'reject' })
        .sendMessages({
          chatId,
          messages: [userMessage('hold A'), userMessage('B')],
          trigger: 'submit-message',
          messageId: undefined,
          abortSignal: undefined,
        })
        .then(
          () => null,
          (e: unknown) => e
        )
      assert.equal(error?.statusCode, 409)
      const body = JSON.parse(error.responseBody)
      assert.equal(body.code, 'thread_busy')
      assert.equal(body.runId, turn.run_id)
      assert.equal(await rowsOf(db), before)
      held.release('hold A')
      assert.equal(textOf(await firstChunks), 'answer to hold A')
    })

    test('a policy value that does not exist: 400 naming the rule on both doors, nothing written', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(close)
      const before = await rowsOf(db)
      const agui = await readResponse(
        await postJson(
          `${url}/agui`,
          runInput(`thread-${randomUUID()}`, `run-${randomUUID()}`, {
            forwardedProps: { multitaskStrategy: 'sometimes' },
          })
        )
      )
      assert.equal(agui.status, 400)
      assert.equal(agui.json.code, 'invalid_input')
      assert.include(
        agui.json.message,
        '"forwardedProps.multitaskStrategy" fails the "multitaskStrategy" rule'
      )
      assert.notInclude(agui.text, 'sometimes')
      const chat = await readResponse(
        await postJson(`${url}/chat`, {
          id: `chat-${randomUUID()}`,
          messages: [userMessage('hi')],
          trigger: 'submit-message',
          multitaskStrategy: 'sometimes',
        })
      )
      assert.equal(chat.status, 400)
      assert.equal(chat.json.code, 'invalid_input')
      assert.include(chat.json.message, '"multitaskStrategy" fails the "multitaskStrategy" rule')
      assert.notInclude(chat.text, 'sometimes')
      assert.equal(await rowsOf(db), before)
      assert.deepEqual(held.log, [])
    })

    test('enqueue (AG-UI, forwardedProps): each message waits its turn, told its place, and runs in order', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(close)
      const threadId = `thread-${randomUUID()}`
      const first = agentOn(url, threadId, 'hold A').runAgent()
      await held.started('hold A')
      const enqueue = { forwardedProps: { multitaskStrategy: 'enqueue' } }
      const recordB = recordingFetch()
      const runB = `run-${randomUUID()}`
      const second = agentOn(url, threadId, 'hold B', recordB.fetch).runAgent({
        runId: runB,
        ...enqueue,
      })
      await queued(db, threadId, 1)
      const recordC = recordingFetch()
      const third = agentOn(url, threadId, 'C', recordC.fetch).runAgent(enqueue)
      await queued(db, threadId, 2)
      // Nothing of the queued messages ran, nor did their runs start.
      assert.deepEqual(held.log, ['start:hold A'])

      held.release('hold A')
      await first
      await held.started('hold B')
      await queued(db, threadId, 1)
      assert.deepEqual(held.log, ['start:hold A', 'end:hold A', 'start:hold B'])
      held.release('hold B')
      const [resultB, resultC] = await Promise.all([second, third])
      assert.deepEqual(held.log, [
        'start:hold A',
        'end:hold A',
        'start:hold B',
        'end:hold B',
        'start:C',
        'end:C',
      ])
      assert.equal(held.maxActive, 1)
      await queued(db, threadId, 0)

      const eventsB = recordB.events()
      await assertConforms(assert, eventsB)
      assert.equal(eventsB[0].type, 'RUN_STARTED')
      assert.equal(eventsB[0].runId, runB)
      assert.deepEqual(eventsB[1], { type: 'CUSTOM', name: 'queued', value: { position: 1 } })
      assert.equal(eventsB.filter((e) => e.type === 'RUN_STARTED').length, 1)
      assert.equal(eventsB.at(-1)!.type, 'RUN_FINISHED')
      const eventsC = recordC.events()
      await assertConforms(assert, eventsC)
      const places = eventsC
        .filter((e) => e.type === 'CUSTOM' && e.name === 'queued')
        .map((e) => e.value.position)
      assert.equal(places[0], 2)
      assert.deepEqual([...places].sort().reverse(), places)
      const said = (result: typeof resultB) =>
        result.newMessages
          .filter((m) => m.role === 'assistant')
          .map((m) => m.content)
          .join('')
      assert.equal(said(resultB), 'answer to hold B')
      assert.equal(said(resultC), 'answer to C')
    })

    test('enqueue on a full queue: 409 queue_full, nothing written', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner, {
        agui: { multitaskStrategy: 'enqueue' },
        maxQueuedRuns: 1,
      })
      cleanup(close)
      const threadId = `thread-${randomUUID()}`
      const first = agentOn(url, threadId, 'hold A').runAgent()
      await held.started('hold A')
      // The door's policy is `enqueue` here: no forwardedProps needed.
      const second = agentOn(url, threadId, 'B').runAgent()
      await queued(db, threadId, 1)
      const before = await rowsOf(db)
      const full = await readResponse(
        await postJson(`${url}/agui`, runInput(threadId, `run-${randomUUID()}`))
      )
      assert.equal(full.status, 409)
      assert.equal(full.json.code, 'queue_full')
      assert.include(full.json.message, '1')
      const chatFull = await readResponse(
        await postJson(`${url}/chat`, {
          id: threadId,
          messages: [userMessage('D')],
          trigger: 'submit-message',
        })
      )
      assert.equal(chatFull.status, 409)
      assert.equal(chatFull.json.code, 'queue_full')
      assert.equal(await rowsOf(db), before)
      held.release('hold A')
      await Promise.all([first, second])
      assert.deepEqual(held.log, ['start:hold A', 'end:hold A', 'start:B', 'end:B'])
    })

    test('enqueue is the useChat default: the page gets a data-queued part, then the turn', async ({
      assert,
      cleanup,
    }) => {
      const held = heldRunner()
      const { url, db, close } = await serveDoors(transport, held.runner)
      cleanup(close)
      const chatId = `chat-${randomUUID()}`
      const first = chatTransport(url)
        .sendMessages({
          chatId,
          messages: [userMessage('hold A')],
          trigger: 'submit-message',
          messageId: undefined,
          abortSignal: undefined,
        })
        .then(chunksOf)
      await held.started('hold A')
      const second = chatTransport(url)
        .sendMessages({
          chatId,
          messages: [userMessage('hold A'), userMessage('B')],
          trigger: 'submit-message',
          messageId: undefined,
          abortSignal: undefined,
        })
        .then(chunksOf)
      await queued(db, chatId, 1)
      assert.deepEqual(held.log, ['start:hold A'])
      held.release('hold A')
      const [chunksA, chunksB] = await Promise.all([first, second])
      assert.equal(textOf(chunksA), 'answer to hold A')
      assert.equal(textOf(chunksB), 'answer to B')
      assert.equal(chunksB[0].type, 'start')
      assert.deepEqual(chunksB[1], { type: 'data-queued', data: { position: 1 }, transient: true })
      assert.equal(chunksB.filter((c) => c.type === 'start').length, 1)
      assert.equal(chunksB.at(-1)!.type, 'finish')
      const turns = await db.connection().from(tables.aguiRuns).where('thread_id', chatId)
      assert.lengthOf(turns, 2)
      assert.include(
        turns.map((t) => t.run_id),
        (chunksB[0] as { messageId: string }).messageId
      )
      assert.deepEqual(held.log, ['start:hold A', 'end:hold A', 'start:B', 'end:B'])
    })
  })
}

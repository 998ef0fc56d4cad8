import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { UIMessageChunk } from 'ai'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { scriptedAgent, type ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { headlessChat, textOf, toolParts } from './helpers/ui_chat.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'

const MAX_BODY = 16_384

/** The useChat door's Fetch handler on a bare `node:http` server (see `serveRuntime`). */
async function serveBare(options: ScriptedAgentOptions) {
  const served = await serveRuntime(
    { runner: scriptedAgent(options), agui: { maxBodyBytes: MAX_BODY } },
    (runtime, principal) =>
      createUiMessageFetchHandler(runtime.uiMessage, { basePath: '/agent', principal })
  )
  return { ...served, base: `${served.url}/agent` }
}

/** One SSE block of a UI message stream: its `id:` (when it has one) and its data. */
interface Block {
  id?: string
  data: UIMessageChunk | '[DONE]'
}

function blocksOf(text: string): Block[] {
  return text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const id = /^id: (.*)$/m.exec(block)?.[1]
      const data = block.slice(block.indexOf('data: ') + 6)
      return { ...(id ? { id } : {}), data: data === '[DONE]' ? data : JSON.parse(data) }
    })
}

const deltas = (blocks: Block[]) =>
  blocks.map((b) =>
    typeof b.data === 'object' && b.data.type === 'text-delta' ? b.data.delta : ''
  )

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** POST a chat body (JSON unless `init` says otherwise) as alice. */
function post(base: string, body: unknown, init: { user?: string; type?: string } = {}) {
  return fetch(`${base}/chat`, {
    method: 'POST',
    headers: { 'content-type': init.type ?? 'application/json', 'x-user': init.user ?? 'alice' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

test.group('useChat door outside AdonisJS: the Fetch-API handler on node:http', () => {
  test('a turn with DefaultChatTransport + readUIMessageStream: approval, decision, the protocol header', async ({
    assert,
    cleanup,
  }) => {
    const { base, runtime, close } = await serveBare({ steps: ['read', 'approval'] })
    cleanup(close)
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(base, chatId)
    const asked = await chat.send('send the report')
    assert.equal(textOf(asked), 'Revenue was 42. ')
    const [search, call] = toolParts(asked)
    assert.deepEqual(search.output, { revenue: 42 })
    assert.equal(call.type, 'tool-send_email')
    assert.equal(call.state, 'approval-requested')
    // A reload while it waits: the parked turn is still active, replayed to the question.
    const again = await chat.resume()
    assert.equal(again!.id, asked.id)
    assert.equal(toolParts(again!)[1].state, 'approval-requested')

    const done = await chat.answerApprovals(true)
    assert.equal(done.id, asked.id)
    assert.equal(toolParts(done)[1].state, 'output-available')
    assert.equal(textOf(done), 'Revenue was 42. Sent. All done.')
    const [item] = await runtime.parking.queries.list({ status: 'decided', streamRunId: asked.id })
    assert.equal(item.status, 'approved')
    assert.equal(item.decidedBy, 'alice')
    // Finished: nothing to resume (204).
    assert.isNull(await chat.resume())

    // The bytes: SSE with the AI SDK's protocol header, `id:` cursors, `[DONE]` last.
    const raw = await post(base, {
      id: `chat-${randomUUID()}`,
      messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'numbers?' }] }],
      trigger: 'submit-message',
    })
    assert.equal(raw.status, 200)
    assert.equal(raw.headers.get('x-vercel-ai-ui-message-stream'), 'v1')
    assert.match(raw.headers.get('content-type')!, /^text\/event-stream/)
    assert.equal(raw.headers.get('cache-control'), 'no-cache, no-transform')
    const blocks = blocksOf(await raw.text())
    assert.equal(blocks.at(-1)!.data, '[DONE]')
    assert.equal((blocks[0].data as UIMessageChunk).type, 'start')
    assert.isAbove(blocks.filter((b) => b.id).length, 2)
  })

  test('a resume after a cut (Last-Event-ID, ?after=) returns exactly the rest; 204 without an active turn', async ({
    assert,
    cleanup,
  }) => {
    const { base, close } = await serveBare({ steps: ['read'], tokensPerSecond: 40 })
    cleanup(close)
    const chatId = `chat-${randomUUID()}`
    // Nothing was ever said in this chat: 204, no body.
    const none = await fetch(`${base}/chat/${chatId}/stream`, { headers: { 'x-user': 'alice' } })
    assert.equal(none.status, 204)
    assert.equal(await none.text(), '')

    const controller = new AbortController()
    const response = await fetch(`${base}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify({
        id: chatId,
        messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
      }),
      signal: controller.signal,
    })
    // Read until some text came with a cursor, then cut: what counts is up to the last `id:`.
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    let kept: Block[] = []
    while (!deltas(kept).join('').includes('Revenue')) {
      const { value, done } = await reader.read()
      assert.isFalse(done, 'the turn ended before the cut')
      text += decoder.decode(value, { stream: true })
      const blocks = blocksOf(text.slice(0, text.lastIndexOf('\n\n') + 2))
      const last = blocks.findLastIndex((b) => b.id)
      kept = blocks.slice(0, last + 1)
    }
    controller.abort()
    await reader.cancel().catch(() => {})
    const cursor = kept.at(-1)!.id!

    // Two reloads from the cut, each naming the cursor its own way: the same rest, once.
    const [byHeader, byQuery] = await Promise.all([
      fetch(`${base}/chat/${chatId}/stream`, {
        headers: { 'x-user': 'alice', 'last-event-id': cursor },
      }),
      fetch(`${base}/chat/${chatId}/stream?after=${encodeURIComponent(cursor)}`, {
        headers: { 'x-user': 'alice' },
      }),
    ])
    assert.equal(byHeader.status, 200)
    assert.equal(byHeader.headers.get('x-vercel-ai-ui-message-stream'), 'v1')
    const rest = blocksOf(await byHeader.text())
    assert.deepEqual(blocksOf(await byQuery.text()), rest)
    assert.equal(rest.at(-1)!.data, '[DONE]')
    assert.equal(deltas(kept).join('') + deltas(rest).join(''), 'Revenue was 42. All done.')
    // No cursor of the rest is at or before the cut.
    const restIds = rest.filter((b) => b.id).map((b) => b.id!)
    for (const id of kept.filter((b) => b.id).map((b) => b.id!)) assert.notInclude(restIds, id)

    // The turn is over: nothing active, with or without a cursor.
    const after = await fetch(`${base}/chat/${chatId}/stream`, {
      headers: { 'x-user': 'alice', 'last-event-id': cursor },
    })
    assert.equal(after.status, 204)
    assert.isNull(await headlessChat(base, chatId).resume())
  })

  test('refusals: each status names the rule, never echoes the value, and changes nothing', async ({
    assert,
    cleanup,
  }) => {
    const { base, url, runtime, close } = await serveBare({ steps: ['approval'] })
    cleanup(close)
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(base, chatId)
    const asked = await chat.send('send the report')
    const secret = 'sekrit-value-42'
    const message = (text: string) => [{ id: 'u0', role: 'user', parts: [{ type: 'text', text }] }]
    const runsBefore = await runtime.uiMessage.runs.latest(chatId)

    const expect = async (
      response: Response,
      status: number,
      code: string,
      rule?: RegExp
    ): Promise<void> => {
      const text = await response.text()
      assert.equal(response.status, status, text)
      assert.match(response.headers.get('content-type')!, /^application\/json/)
      const body = JSON.parse(text)
      assert.deepEqual(Object.keys(body).sort(), ['code', 'message'])
      assert.equal(body.code, code)
      if (rule) assert.match(body.message, rule)
      assert.notInclude(text, secret)
    }

    // 415: a form post (text/plain) starts nothing, whatever it holds.
    await expect(
      await post(base, { id: chatId, messages: message(secret) }, { type: 'text/plain' }),
      415,
      'unsupported_media_type'
    )
    // 413: past the door's cap (declared, and streamed without a length).
    const big = { id: `chat-${randomUUID()}`, messages: message(secret.repeat(MAX_BODY / 8)) }
    await expect(await post(base, big), 413, 'body_too_large', new RegExp(`${MAX_BODY} bytes`))
    const chunked = await fetch(`${base}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(JSON.stringify(big)))
          controller.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)
    await expect(chunked, 413, 'body_too_large')
    // 400: not JSON; a bad chat id; nested past the depth cap (the rule named).
    await expect(await post(base, `{"id": "${secret}`), 400, 'invalid_input')
    await expect(
      await post(base, { id: `a/${secret}`, messages: message('hi') }),
      400,
      'invalid_input',
      /id/
    )
    let deep: unknown = secret
    for (let i = 0; i < 200; i++) deep = [deep]
    await expect(
      await post(base, { id: `chat-${randomUUID()}`, messages: message('hi'), extra: deep }),
      400,
      'invalid_input',
      /maxDepth/
    )
    // 400: a cursor the door never gave.
    await expect(
      await fetch(`${base}/chat/${chatId}/stream?after=${secret}`, {
        headers: { 'x-user': 'alice' },
      }),
      400,
      'invalid_cursor'
    )
    await expect(
      await fetch(`${base}/chat/${chatId}/stream`, {
        headers: { 'x-user': 'alice', 'last-event-id': '999999' },
      }),
      400,
      'invalid_cursor'
    )
    // 404: another person's chat (read or written), unknown paths, a malformed escape.
    await expect(
      await fetch(`${base}/chat/${chatId}/stream`, { headers: { 'x-user': 'bob' } }),
      404,
      'not_found'
    )
    await expect(
      await post(base, { id: chatId, messages: message(secret) }, { user: 'bob' }),
      404,
      'not_found'
    )
    await expect(await fetch(`${url}/elsewhere/chat`), 404, 'not_found')
    await expect(await fetch(`${url}/agentx/chat`, { method: 'POST' }), 404, 'not_found')
    await expect(await fetch(`${base}/chat/%zz/stream`), 404, 'not_found')
    // 405: the routes with the other method.
    await expect(await fetch(`${base}/chat`, { method: 'PUT' }), 405, 'method_not_allowed')
    await expect(
      await fetch(`${base}/chat/${chatId}/stream`, { method: 'POST' }),
      405,
      'method_not_allowed'
    )
    // 409: a new message while the approval is open.
    await expect(
      await post(base, {
        id: chatId,
        messages: [
          ...chat.messages,
          { id: 'u9', role: 'user', parts: [{ type: 'text', text: secret }] },
        ],
      }),
      409,
      'interrupt_pending'
    )

    // Nothing changed: the same turn, still waiting, nothing decided, no other chat started.
    assert.deepEqual(await runtime.uiMessage.runs.latest(chatId), runsBefore)
    assert.lengthOf(await runtime.parking.queries.pendingOf(asked.id), 1)
    assert.lengthOf(await runtime.parking.queries.list({ status: 'decided' }), 0)
    assert.isNull(await runtime.uiMessage.runs.latest(big.id))
    const again = await chat.resume()
    assert.equal(toolParts(again!)[0].state, 'approval-requested')
  })

  test('a client that goes away ends the server-side reader; the turn goes on', async ({
    assert,
    cleanup,
  }) => {
    const { base, runtime, close } = await serveBare({ steps: ['read'], tokensPerSecond: 5 })
    cleanup(close)
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(base, chatId)
    const drop = await chat.sendAndDrop('go', (chunk) => chunk.type === 'text-delta')
    // A reload that reads a little, then the tab closes too.
    const controller = new AbortController()
    const stream = await chat.transport.reconnectToStream({
      chatId,
      abortSignal: controller.signal,
    } as any)
    const reader = stream!.getReader()
    let first = await reader.read()
    while (!first.done && first.value.type !== 'text-delta') first = await reader.read()
    await until(
      () => sinkInternals(runtime.sink).tail.followed > 0,
      'the live reader to follow the stream'
    )
    controller.abort()
    await reader.cancel().catch(() => {})
    // Both readers are gone from the server while the run still writes.
    await until(() => sinkInternals(runtime.sink).tail.followed === 0, 'the readers to end')
    assert.equal((await runtime.sink.head(drop))?.status, 'open')
    // Once the run ends there is nothing to resume.
    await runtime.driver.settled()
    const whole = await headlessChat(base, chatId).transport.reconnectToStream({ chatId } as any)
    assert.isNull(whole)
  }).timeout(30_000)
})

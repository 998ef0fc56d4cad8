import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { UIMessageChunk } from 'ai'
import { scriptedAgent, type ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { jsonClient, serveApp } from './helpers/http.js'
import { parseSse } from './helpers/agui.js'
import { headlessChat, textOf, toolParts } from './helpers/ui_chat.js'

async function setup(options: ScriptedAgentOptions = {}) {
  const served = await serveApp({ runner: scriptedAgent(options) })
  await resetTables(await served.app.container.make('lucid.db'))
  return served
}

/** The SSE `data:` payloads of a UI message stream body, `[DONE]` included as a string. */
function dataOf(body: string) {
  return body
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => block.slice(block.indexOf('data: ') + 6))
    .map((data) => (data === '[DONE]' ? data : (JSON.parse(data) as UIMessageChunk)))
}

test.group('useChat door over HTTP with the AI SDK client', () => {
  test('a streamed answer: the protocol header, SSE chunks, [DONE], and the whole message', async ({
    assert,
  }) => {
    const { url } = await setup({ steps: ['reasoning', 'read'] })
    const chatId = `chat-${randomUUID()}`
    const response = await fetch(`${url}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': 'alice' },
      body: JSON.stringify({
        id: chatId,
        messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'numbers?' }] }],
        trigger: 'submit-message',
      }),
    })
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('x-vercel-ai-ui-message-stream'), 'v1')
    assert.match(response.headers.get('content-type')!, /^text\/event-stream/)
    const chunks = dataOf(await response.text())
    assert.equal(chunks.at(-1), '[DONE]')
    const first = chunks[0] as UIMessageChunk & { type: 'start' }
    assert.equal(first.type, 'start')
    assert.isString(first.messageId)
    assert.deepEqual(chunks.at(-2), { type: 'finish', finishReason: 'stop' })
    // Reasoning stays on the server unless configured (the projection's rule).
    assert.notInclude(JSON.stringify(chunks), 'reasoning')

    const chat = headlessChat(url, `chat-${randomUUID()}`)
    const message = await chat.send('numbers?')
    assert.equal(message.role, 'assistant')
    assert.equal(textOf(message), 'Let me look at this week. Revenue was 42. All done.')
    const [search] = toolParts(message)
    assert.equal(search.type, 'tool-search')
    assert.equal(search.state, 'output-available')
    assert.deepEqual(search.input, { q: 'weekly numbers' })
    assert.deepEqual(search.output, { revenue: 42 })
    // Nothing active once the turn finished.
    assert.isNull(await chat.resume())
  })

  test('a reload mid-answer resumes the turn with no duplicated or missing text', async ({
    assert,
  }) => {
    const { url } = await setup({ steps: ['read'], tokensPerSecond: 40 })
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(url, chatId)
    chat.messages.push({ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'go' }] })
    const controller = new AbortController()
    const stream = await chat.transport.sendMessages({
      chatId,
      messages: chat.messages,
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: controller.signal,
    })
    // Read until some text arrived, then drop the page (the request is aborted).
    const reader = stream.getReader()
    let seen = ''
    let messageId = ''
    while (!seen.includes('Revenue')) {
      const { value } = await reader.read()
      if (value?.type === 'start') messageId = value.messageId!
      if (value?.type === 'text-delta') seen += value.delta
    }
    controller.abort()
    await reader.cancel().catch(() => {})
    // The new page: useChat({ resume: true }) reconnects; the turn is replayed from its start.
    const resumed = await chat.resume()
    assert.isNotNull(resumed)
    assert.equal(resumed!.id, messageId)
    assert.equal(textOf(resumed!), 'Revenue was 42. All done.')
    assert.equal(toolParts(resumed!)[0].state, 'output-available')
    // Resumed again after it finished: nothing active.
    assert.isNull(await chat.resume())
  })

  test('an approval: tool-approval-request, addToolApprovalResponse decides it once, the run goes on', async ({
    assert,
  }) => {
    const { url, agentStream } = await setup({ steps: ['approval'] })
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(url, chatId)
    const asked = await chat.send('send the report')
    const [call] = toolParts(asked)
    assert.equal(call.type, 'tool-send_email')
    assert.equal(call.state, 'approval-requested')
    assert.match(call.approval.id, /^approval-\d+$/)
    // A reload while it waits: the turn is still active, replayed up to the question.
    const again = await chat.resume()
    assert.equal(toolParts(again!)[0].state, 'approval-requested')
    assert.equal(again!.id, asked.id)

    const done = await chat.answerApprovals(true)
    assert.equal(done.id, asked.id)
    const [sent] = toolParts(done)
    assert.equal(sent.state, 'output-available')
    assert.deepEqual(sent.output.sent, true)
    assert.equal(textOf(done), 'Sent. All done.')
    // The item is decided once, via the chat, by alice.
    const [item] = await agentStream.parking.queries.list({
      status: 'decided',
      streamRunId: asked.id,
    })
    assert.equal(item.status, 'approved')
    assert.equal(item.decidedVia, 'chat')
    assert.equal(item.decidedBy, 'alice')

    // A different answer again (decide once): the decision stands, and the answer is the
    // continuation showing it (`tool-approval-response` approved), nothing changes.
    const request = jsonClient(url)
    const replay = structuredClone(chat.messages)
    const part = toolParts(replay.at(-1)!)[0]
    part.state = 'approval-responded'
    part.approval = { id: call.approval.id, approved: false }
    const twice = await request('POST', '/chat', { id: chatId, messages: replay })
    assert.equal(twice.status, 200)
    const chunks = dataOf(twice.text)
    assert.deepInclude(chunks, {
      type: 'tool-approval-response',
      approvalId: call.approval.id,
      approved: true,
    })
    assert.notDeepInclude(chunks, { type: 'tool-output-denied', toolCallId: call.toolCallId })
    assert.deepEqual(chunks.slice(-2), [{ type: 'finish', finishReason: 'stop' }, '[DONE]'])
    const decided = await agentStream.parking.queries.list({
      status: 'decided',
      streamRunId: asked.id,
    })
    assert.deepEqual(
      decided.map((i) => [i.status, i.decidedVia]),
      [['approved', 'chat']]
    )
  })

  test('a denial: tool-output-denied, and the run goes on without the call', async ({ assert }) => {
    const { url } = await setup({ steps: ['approval'] })
    const chat = headlessChat(url, `chat-${randomUUID()}`)
    await chat.send('send the report')
    const done = await chat.answerApprovals(false, 'not today')
    const [call] = toolParts(done)
    assert.equal(call.state, 'output-denied')
    assert.equal(call.approval.approved, false)
    assert.equal(textOf(done), 'Not sent (rejected). All done.')
  })

  test('ownership and refusals: another person, a decided item, bad bodies; nothing written', async ({
    assert,
  }) => {
    const { url, agentStream } = await setup({ steps: ['approval'] })
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(url, chatId)
    const asked = await chat.send('send the report')
    const request = jsonClient(url)
    const answered = structuredClone(chat.messages)
    const part = toolParts(answered.at(-1)!)[0]
    part.state = 'approval-responded'
    part.approval = { ...part.approval, approved: true }

    // Bob can neither read nor decide alice's chat.
    assert.equal((await request('GET', `/chat/${chatId}/stream`, undefined, 'bob')).status, 404)
    const bob = await request('POST', '/chat', { id: chatId, messages: answered }, 'bob')
    assert.equal(bob.status, 404)
    // A new message while the approval is open.
    const early = await request('POST', '/chat', {
      id: chatId,
      messages: [
        ...chat.messages,
        { id: 'u9', role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      ],
    })
    assert.equal(early.status, 409)
    assert.equal(early.json.code, 'interrupt_pending')
    // An approval id the door never minted; no body; a bad chat id.
    const forged = structuredClone(answered)
    toolParts(forged.at(-1)!)[0].approval.id = 'approval-999'
    assert.equal((await request('POST', '/chat', { id: chatId, messages: forged })).status, 404)
    const bad = await request('POST', '/chat', { id: 'a/b', messages: chat.messages })
    assert.equal(bad.status, 400)
    assert.equal(bad.json.code, 'invalid_input')
    assert.notInclude(bad.text, 'a/b')
    assert.lengthOf(await agentStream.parking.queries.list({ status: 'decided' }), 0)

    // Decided elsewhere first (the decision API): no conflict for the chat, its answer is the
    // turn from the ask on, with the decision made first (rejected), not the page's.
    const [item] = await agentStream.parking.queries.pendingOf(asked.id)
    const api = await request('POST', `/items/${item.runId}/${item.itemId}/reject`, {})
    assert.equal(api.status, 200)
    const late = await request('POST', '/chat', { id: chatId, messages: answered })
    assert.equal(late.status, 200)
    const chunks = dataOf(late.text)
    assert.deepInclude(chunks, {
      type: 'tool-approval-response',
      approvalId: part.approval.id,
      approved: false,
    })
    assert.deepInclude(chunks, { type: 'tool-output-denied', toolCallId: part.toolCallId })
    const [decided] = await agentStream.parking.queries.list({
      status: 'decided',
      streamRunId: asked.id,
    })
    assert.equal(decided.status, 'rejected')
    assert.equal(decided.decidedVia, 'api')
  })

  test('the same stored run through AG-UI and this door at the same time', async ({ assert }) => {
    const { url } = await setup({ steps: ['read'], tokensPerSecond: 60 })
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(url, chatId)
    const sending = chat.send('go')
    // While it streams: the turn is a run of the thread; AG-UI attaches by thread.
    let agui = ''
    for (let i = 0; i < 50 && !agui.includes('TEXT_MESSAGE_CONTENT'); i++) {
      const attach = await fetch(`${url}/agui/threads/${chatId}`, {
        headers: { 'x-user': 'alice' },
      })
      agui = await attach.text()
      if (!agui.includes('RUN_FINISHED')) await new Promise((r) => setTimeout(r, 20))
    }
    const message = await sending
    const events = parseSse(agui).map((e) => e.event)
    assert.equal(events[0].type, 'RUN_STARTED')
    assert.equal(events[0].runId, message.id)
    const aguiText = events
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta)
      .join('')
    assert.equal(aguiText, textOf(message))
    assert.equal(events.at(-1)!.type, 'RUN_FINISHED')
    // And re-attach by run id, from the start: the same text again.
    const reattach = await fetch(`${url}/agui/runs/${message.id}`, {
      headers: { 'x-user': 'alice' },
    })
    const again = parseSse(await reattach.text()).map((e) => e.event)
    assert.equal(
      again
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
      'Revenue was 42. All done.'
    )
  })

  test('resume on another replica, and after the first one stopped', async ({ assert }) => {
    const runner = scriptedAgent({ steps: ['read', 'approval'], tokensPerSecond: 30 })
    const first = await serveApp({ runner })
    await resetTables(await first.app.container.make('lucid.db'))
    const second = await serveApp({ runner })
    const chatId = `chat-${randomUUID()}`
    const onFirst = headlessChat(first.url, chatId)
    const messageId = await onFirst.sendAndDrop('go', (chunk) => chunk.type === 'text-delta')
    // The page comes back on the other replica while the first one still writes.
    const onSecond = headlessChat(second.url, chatId)
    const resumed = await onSecond.resume()
    assert.equal(resumed!.id, messageId)
    assert.equal(textOf(resumed!), 'Revenue was 42. ')
    assert.equal(toolParts(resumed!)[1].state, 'approval-requested')
    // The first replica goes away; the parked turn is still there, and is decided on the second.
    await first.app.terminate()
    const again = await onSecond.resume()
    assert.equal(textOf(again!), 'Revenue was 42. ')
    const done = await onSecond.answerApprovals(true)
    assert.equal(textOf(done), 'Revenue was 42. Sent. All done.')
  })
})

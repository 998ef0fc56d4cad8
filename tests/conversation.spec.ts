import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import {
  convertToModelMessages,
  DefaultChatTransport,
  jsonSchema,
  readUIMessageStream,
  streamText,
  tool,
  validateUIMessages,
  type UIMessage,
  type UIMessageChunk,
} from 'ai'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import type { AgentRunner } from '../src/runner/contract.js'
import type { AgentStreamConfig } from '../src/define_config.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { resetTables } from './helpers/db.js'
import { jsonClient, serveApp } from './helpers/http.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { finish, scriptedModel, text, toolCall, type Turn } from './helpers/ai_sdk.js'

/** A runner that keeps every `ctx.input` its runs started with. */
function recording(runner: AgentRunner) {
  const inputs: unknown[] = []
  return {
    inputs,
    runner: {
      start: (ctx) => {
        inputs.push(ctx.input)
        return runner.start(ctx)
      },
      resume: (ctx) => runner.resume(ctx),
    } satisfies AgentRunner,
  }
}

/** The model messages of a prompt as JSON (what the provider would be sent). */
const promptOf = (call: { prompt: unknown }) => JSON.parse(JSON.stringify(call.prompt))

/** The AI SDK's own `useChat` client: `DefaultChatTransport` (with `body`) and its reader. */
function chatClient(base: string, chatId: string, user = 'alice', body?: object) {
  const transport = new DefaultChatTransport<UIMessage>({
    api: `${base}/chat`,
    headers: { 'x-user': user },
    ...(body ? { body } : {}),
  })
  const messages: UIMessage[] = []
  async function read(stream: ReadableStream<UIMessageChunk>, message?: UIMessage) {
    let last: UIMessage | undefined
    for await (const snapshot of readUIMessageStream({
      message: message ? structuredClone(message) : undefined,
      stream,
      terminateOnError: true,
    })) {
      last = snapshot
    }
    const at = messages.findIndex((m) => m.id === last!.id)
    if (at === -1) messages.push(last!)
    else messages[at] = last!
    return last!
  }
  return {
    messages,
    async send(parts: UIMessage['parts']) {
      messages.push({ id: `u${messages.length}`, role: 'user', parts })
      const stream = await transport.sendMessages({
        chatId,
        messages,
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      })
      return read(stream)
    },
    async approveAll() {
      const last = structuredClone(messages.at(-1)!)
      for (const part of last.parts as any[]) {
        if (part.state === 'approval-requested') {
          part.state = 'approval-responded'
          part.approval = { ...part.approval, approved: true }
        }
      }
      messages[messages.length - 1] = last
      const stream = await transport.sendMessages({
        chatId,
        messages,
        trigger: 'submit-message',
        messageId: last.id,
        abortSignal: undefined,
      })
      return read(stream, last)
    },
  }
}

async function setup(runner: AgentRunner, config: AgentStreamConfig = {}) {
  const served = await serveApp({ runner, ...config })
  await resetTables(await served.app.container.make('lucid.db'))
  return served
}

const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
const say = (value: string): UIMessage['parts'] => [{ type: 'text', text: value }]

const search = tool({
  inputSchema: jsonSchema<{ q: string }>({ type: 'object', properties: {} }),
  execute: async () => ({ found: 3 }),
})

test.group('Conversations | useChat', () => {
  test('the second turn sends the model the first turn (its file too) as the AI SDK route does; body extras reach ctx.input', async ({
    assert,
  }) => {
    const model = scriptedModel([
      [...toolCall('c1', 'search', { q: 'ada' }), ...finish('tool-calls')],
      [...text('Hello Ada, nice picture.'), ...finish()],
      [...text('Your name is Ada.'), ...finish()],
    ])
    const { runner, inputs } = recording(aiSdkAgent({ model, tools: { search } }))
    const { url } = await setup(runner)
    const chat = chatClient(url, `chat-${randomUUID()}`, 'alice', { tenant: 'acme', mode: 2 })
    await chat.send([
      { type: 'text', text: 'My name is Ada.' },
      { type: 'file', mediaType: 'image/png', url: PNG, filename: 'me.png' },
    ])
    const before = structuredClone(chat.messages)
    const second = await chat.send(say('What is my name?'))
    assert.equal((second.parts.find((p) => p.type === 'text') as any).text, 'Your name is Ada.')

    assert.lengthOf(model.doStreamCalls, 3)
    const prompt = promptOf(model.doStreamCalls[2])
    assert.deepEqual(
      prompt.map((m: any) => m.role),
      ['user', 'assistant', 'tool', 'assistant', 'user']
    )
    assert.equal(prompt[0].content[0].text, 'My name is Ada.')
    assert.equal(prompt[0].content[1].type, 'file')
    assert.equal(prompt[0].content[1].mediaType, 'image/png')
    assert.equal(prompt[3].content[0].text, 'Hello Ada, nice picture.')
    assert.deepEqual(prompt.at(-1).content, [{ type: 'text', text: 'What is my name?' }])

    // The AI SDK's documented route: streamText on convertToModelMessages(useChat's messages).
    const replay = scriptedModel([[...text('Your name is Ada.'), ...finish()]])
    await streamText({
      model: replay,
      tools: { search },
      messages: await convertToModelMessages([...before, chat.messages.at(-2)!]),
    }).consumeStream()
    assert.deepEqual(promptOf(model.doStreamCalls[2]), promptOf(replay.doStreamCalls[0]))

    for (const input of inputs) {
      assert.deepEqual((input as any).body, { tenant: 'acme', mode: 2 })
    }
    assert.equal((inputs[1] as any).message, 'What is my name?')
  })

  test('GET /chat/:chatId/messages: the UIMessage[] the stream built, for useChat({ messages }); 404 for another person', async ({
    assert,
  }) => {
    const model = scriptedModel([
      [...text('Let me look. '), ...toolCall('c1', 'search', { q: 'x' }), ...finish('tool-calls')],
      [...text('Found 3.'), ...finish()],
      [...text('Bye.'), ...finish()],
    ])
    const { url } = await setup(aiSdkAgent({ model, tools: { search } }))
    const chatId = `chat-${randomUUID()}`
    const chat = chatClient(url, chatId)
    await chat.send([
      { type: 'text', text: 'Look it up' },
      { type: 'file', mediaType: 'image/png', url: PNG },
    ])
    await chat.send(say('Thanks'))
    const request = jsonClient(url)
    const stored = await request('GET', `/chat/${chatId}/messages`)
    assert.equal(stored.status, 200)
    assert.deepEqual(stored.json, JSON.parse(JSON.stringify(chat.messages)))
    assert.deepEqual(await validateUIMessages({ messages: stored.json }), stored.json)

    const other = await request('GET', `/chat/${chatId}/messages`, undefined, 'bob')
    const missing = await request('GET', `/chat/chat-${randomUUID()}/messages`)
    assert.equal(other.status, 404)
    assert.deepEqual(other.json, missing.json)
    assert.deepEqual(other.json, { code: 'not_found', message: 'No such chat' })
  })

  test('the Fetch handler serves the same messages, 404 for another person', async ({
    assert,
    cleanup,
  }) => {
    const model = scriptedModel([[...text('Hi.'), ...finish()]])
    const { url, close } = await serveRuntime(
      { runner: aiSdkAgent({ model }) },
      (runtime, principal) => createUiMessageFetchHandler(runtime.uiMessage, { principal })
    )
    cleanup(close)
    const chatId = `chat-${randomUUID()}`
    const chat = chatClient(url, chatId)
    await chat.send(say('Hello'))
    const request = jsonClient(url)
    const stored = await request('GET', `/chat/${chatId}/messages`)
    assert.equal(stored.status, 200)
    assert.deepEqual(stored.json, JSON.parse(JSON.stringify(chat.messages)))
    assert.equal((await request('GET', `/chat/${chatId}/messages`, undefined, 'bob')).status, 404)
  })

  test("a resume's rebuilt prompt is the AI SDK route's own, the earlier turn before it", async ({
    assert,
  }) => {
    const ran: unknown[] = []
    const sendEmail = tool({
      inputSchema: jsonSchema<{ to: string }>({ type: 'object', properties: {} }),
      needsApproval: true,
      execute: async (input) => {
        ran.push(input)
        return { sent: true }
      },
    })
    const turns: Turn[] = [
      [...text('Noted.'), ...finish()],
      [
        ...text('Sending. '),
        ...toolCall('c9', 'send_email', { to: 'ada' }),
        ...finish('tool-calls'),
      ],
      [...text('Sent.'), ...finish()],
    ]
    const model = scriptedModel(turns)
    const { url } = await setup(aiSdkAgent({ model, tools: { send_email: sendEmail } }))
    const chatId = `chat-${randomUUID()}`
    const chat = chatClient(url, chatId)
    await chat.send(say('Remember: Ada.'))
    await chat.send(say('Email Ada'))
    // What useChat would send its route after the approval: the whole conversation.
    const approved = structuredClone(chat.messages)
    for (const part of approved.at(-1)!.parts as any[]) {
      if (part.state === 'approval-requested') {
        part.state = 'approval-responded'
        part.approval = { ...part.approval, approved: true }
      }
    }
    await chat.approveAll()
    assert.lengthOf(ran, 1)
    assert.lengthOf(model.doStreamCalls, 3)
    const replay = scriptedModel([turns[2]])
    await streamText({
      model: replay,
      tools: {
        send_email: tool({ ...sendEmail, execute: async () => ({ sent: true }) }),
      },
      messages: await convertToModelMessages(approved),
    }).consumeStream()
    assert.deepEqual(promptOf(model.doStreamCalls[2]), promptOf(replay.doStreamCalls[0]))
    // The stored messages of a turn that parked and went on: the message useChat holds.
    const stored = await jsonClient(url)('GET', `/chat/${chatId}/messages`)
    assert.deepEqual(stored.json, JSON.parse(JSON.stringify(chat.messages)))
  })

  test('the bound: the oldest turns are left out whole, past maxBytes or maxTurns', async ({
    assert,
  }) => {
    const long = 'x'.repeat(2000)
    const model = scriptedModel([
      [...text(long), ...finish()],
      [...text('two'), ...finish()],
      [...text('three'), ...finish()],
      [...text('four'), ...finish()],
    ])
    const { url } = await setup(aiSdkAgent({ model }), {
      history: { maxTurns: 2, maxBytes: 1500 },
    })
    const chat = chatClient(url, `chat-${randomUUID()}`)
    for (const line of ['one?', 'two?', 'three?', 'four?']) await chat.send(say(line))
    const texts = (i: number) =>
      promptOf(model.doStreamCalls[i]).map((m: any) =>
        typeof m.content === 'string' ? m.content : m.content.map((p: any) => p.text).join('')
      )
    // Turn one is more than 1500 bytes: left out whole (no half of it), the second turn alone.
    assert.deepEqual(texts(1), ['two?'])
    // Two turns at most: the newest two of three.
    assert.deepEqual(texts(3), ['two?', 'two', 'three?', 'three', 'four?'])
  })

  test('bad input changes nothing: a file with a javascript: URL, a body too large', async ({
    assert,
  }) => {
    const model = scriptedModel([])
    const { url } = await setup(aiSdkAgent({ model }))
    const request = jsonClient(url)
    const chatId = `chat-${randomUUID()}`
    const bad = await request('POST', '/chat', {
      id: chatId,
      messages: [
        {
          id: 'u0',
          role: 'user',
          parts: [
            { type: 'text', text: 'hi' },
            { type: 'file', mediaType: 'text/html', url: 'javascript:alert(1)' },
          ],
        },
      ],
    })
    assert.equal(bad.status, 400)
    assert.equal(bad.json.code, 'invalid_input')
    assert.include(bad.json.message, '"url" rule')
    assert.notInclude(bad.json.message, 'javascript')
    const big = await request('POST', '/chat', {
      id: chatId,
      messages: [{ id: 'u0', role: 'user', parts: say('hi') }],
      extra: 'y'.repeat(70_000),
    })
    assert.equal(big.status, 400)
    assert.include(big.json.message, '"body" fails the "maxBytes" rule')
    assert.equal((await request('GET', `/chat/${chatId}/messages`)).status, 404)
    assert.lengthOf(model.doStreamCalls, 0)
  })
})

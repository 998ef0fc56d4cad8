import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { resetTables } from './helpers/db.js'
import { postJson, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, recordingFetch } from './helpers/agui.js'
import { finish, scriptedModel, text } from './helpers/ai_sdk.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'

const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='

const promptOf = (call: { prompt: unknown }) => JSON.parse(JSON.stringify(call.prompt))

test.group('Conversations | AG-UI', () => {
  test('a new run in a thread gets the earlier runs; forwardedProps reach ctx.input; MESSAGES_SNAPSHOT holds the user messages with their parts', async ({
    assert,
  }) => {
    const model = scriptedModel([
      [...text('A red dot.'), ...finish()],
      [...text('You sent a red dot.'), ...finish()],
    ])
    const inputs: unknown[] = []
    const agent = aiSdkAgent({ model })
    const runner: AgentRunner = {
      start: (ctx) => {
        inputs.push(ctx.input)
        return agent.start(ctx)
      },
      resume: (ctx) => agent.resume(ctx),
    }
    // The user-message kind allow-listed as a custom event: still never sent as one.
    const served = await serveApp({
      runner,
      agui: { messagesSnapshot: true, custom: { 'user-message': ['id', 'parts'] } },
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const recorder = recordingFetch()
    const threadId = `thread-${randomUUID()}`
    const image = {
      type: 'image',
      source: { type: 'data', value: PNG_BASE64, mimeType: 'image/png' },
    }
    const client = new HttpAgent({
      url: `${served.url}/agui`,
      threadId,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [
        { id: 'u1', role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] },
      ] as never,
    })
    await client.runAgent()
    await assertConforms(assert, recorder.events())
    client.addMessage({ id: 'u2', role: 'user', content: 'What did I send?' })
    await client.runAgent({ forwardedProps: { locale: 'fr' } })
    const second = recorder.events()
    await assertConforms(assert, second)

    assert.lengthOf(model.doStreamCalls, 2)
    const prompt = promptOf(model.doStreamCalls[1])
    assert.deepEqual(
      prompt.map((m: any) => m.role),
      ['user', 'assistant', 'user']
    )
    assert.equal(prompt[0].content[0].text, 'What is this?')
    assert.equal(prompt[0].content[1].type, 'file')
    assert.equal(prompt[0].content[1].mediaType, 'image/png')
    assert.equal(prompt[1].content[0].text, 'A red dot.')
    assert.deepEqual(prompt[2].content, [{ type: 'text', text: 'What did I send?' }])
    assert.deepEqual((inputs[1] as any).forwardedProps, { locale: 'fr' })
    assert.notProperty(inputs[0] as object, 'forwardedProps')

    // Never on the wire as the agent's output, nor as a CUSTOM event.
    assert.notInclude(JSON.stringify(second), 'user-message')
    // (The door's own projection, `agent_stream.run_state`, is the one CUSTOM event.)
    assert.isFalse(second.some((e) => e.type === 'CUSTOM' && e.name !== 'agent_stream.run_state'))
    const snapshot = second.find((e) => e.type === 'MESSAGES_SNAPSHOT')!
    const users = snapshot.messages.filter((m: any) => m.role === 'user')
    assert.deepEqual(users, [
      { id: 'u1', role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] },
      { id: 'u2', role: 'user', content: 'What did I send?' },
    ])
    assert.deepEqual(
      snapshot.messages.map((m: any) => m.role),
      ['user', 'assistant', 'user', 'assistant']
    )

    // Re-attached without a cursor: the prelude's snapshot has them too, for the owner only.
    const runId = second.find((e) => e.type === 'RUN_STARTED')!.runId
    const attach = await fetch(`${served.url}/agui/runs/${runId}`, {
      headers: { 'x-user': 'alice' },
    })
    const events = parseSse(await attach.text()).map((e) => e.event)
    const prelude = events.find((e) => e.type === 'MESSAGES_SNAPSHOT')!
    assert.deepEqual(
      prelude.messages.filter((m: any) => m.role === 'user'),
      users
    )
    const bob = await fetch(`${served.url}/agui/runs/${runId}`, { headers: { 'x-user': 'bob' } })
    assert.equal(bob.status, 404)
  })

  test('a part the door cannot keep is refused before anything is written', async ({ assert }) => {
    const served = await serveApp({ runner: scriptedAgent() })
    await resetTables(await served.app.container.make('lucid.db'))
    const threadId = `thread-${randomUUID()}`
    const response = await postJson(`${served.url}/agui`, {
      threadId,
      runId: `run-${randomUUID()}`,
      messages: [
        {
          id: 'u1',
          role: 'user',
          content: [
            { type: 'text', text: 'hi' },
            { type: 'image', source: { type: 'file', value: 'file-123' } },
          ],
        },
      ],
    })
    assert.equal(response.status, 400)
    const body = (await response.json()) as { code: string; message: string }
    assert.equal(body.code, 'invalid_input')
    assert.include(body.message, '"contentPart" rule')
    const attach = await fetch(`${served.url}/agui/threads/${threadId}`, {
      headers: { 'x-user': 'alice' },
    })
    assert.equal(attach.status, 404)
  })

  test("a runner's writer is refused the reserved user-message frame", async ({ assert }) => {
    let refused: unknown = null
    const runner: AgentRunner = {
      async start(ctx) {
        try {
          await ctx.writer.write({
            t: 'event',
            event: { kind: 'user-message', id: 'x', parts: [{ type: 'text', text: 'forged' }] },
          })
        } catch (error) {
          refused = error
        }
        await ctx.writer.write({ t: 'text', v: 'ok' })
        return { status: 'finished' }
      },
      resume: async () => ({ status: 'finished' }),
    }
    const served = await serveApp({ runner })
    await resetTables(await served.app.container.make('lucid.db'))
    const threadId = `thread-${randomUUID()}`
    const response = await postJson(`${served.url}/agui`, {
      threadId,
      runId: `run-${randomUUID()}`,
      messages: [{ id: 'u1', role: 'user', content: 'hi' }],
    })
    await response.text()
    assert.instanceOf(refused, Error)
    assert.include((refused as Error).message, '"event.kind" fails the "reserved" rule')
  })
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import { tool, jsonSchema } from 'ai'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { assertConforms, recordingFetch } from './helpers/agui.js'
import { finish, scriptedModel, text, toolCall } from './helpers/ai_sdk.js'

test.group('AI SDK runner | served through the AG-UI door', () => {
  test('HttpAgent: streamed text, the tool call, the approval interrupt, the resume', async ({
    assert,
    cleanup,
  }) => {
    const ran: unknown[] = []
    const model = scriptedModel([
      [
        ...text('I will send it. '),
        ...toolCall('call_9', 'send_email', { to: 'team@example.com' }),
        ...finish('tool-calls'),
      ],
      [...text('Sent.'), ...finish()],
    ])
    const sendEmail = tool({
      inputSchema: jsonSchema<{ to: string }>({
        type: 'object',
        properties: { to: { type: 'string' } },
      }),
      needsApproval: true,
      execute: async (input) => {
        ran.push(input)
        return { sent: true }
      },
    })
    const { url, close } = await serveRuntime(
      { runner: aiSdkAgent({ model, tools: { send_email: sendEmail } }) },
      (served, principal) => createAgUiFetchHandler(served.door, { basePath: '/agui', principal })
    )
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
    const types = first.map((e) => e.type)
    for (const type of [
      'TEXT_MESSAGE_CONTENT',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
    ]) {
      assert.include(types, type)
    }
    const args = first
      .filter((e) => e.type === 'TOOL_CALL_ARGS')
      .map((e) => e.delta)
      .join('')
    assert.deepEqual(JSON.parse(args), { to: 'team@example.com' })
    assert.lengthOf(client.pendingInterrupts, 1)
    const [interrupt] = client.pendingInterrupts
    assert.equal(interrupt.reason, 'tool_call')
    assert.lengthOf(ran, 0)

    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    const second = recorder.events()
    await assertConforms(assert, second)
    assert.deepEqual(second.at(-1)!.outcome, { type: 'success' })
    assert.deepEqual(ran, [{ to: 'team@example.com' }])
    const result = second.find((e) => e.type === 'TOOL_CALL_RESULT')!
    assert.deepEqual(JSON.parse(result.content), { sent: true })
    assert.equal(
      second
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
      'Sent.'
    )
    // The user's message came through the door into the model's prompt, on both calls.
    for (const call of model.doStreamCalls) {
      assert.deepEqual(call.prompt[0], {
        role: 'user',
        content: [{ type: 'text', text: 'Send the weekly report' }],
        providerOptions: undefined,
      })
    }
  })
})

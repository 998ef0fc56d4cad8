import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import { Agent, setTracingDisabled, tool, type Model, type ModelRequest } from '@openai/agents'
import {
  ScriptedModel,
  assistantMessage,
  functionCall,
  modelResponder,
  type ScriptedModelResponse,
} from '@openai/agents/testing'
import { z } from 'zod'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { openAiAgent } from '../src/runners/openai_agents/index.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { assertConforms, recordingFetch } from './helpers/agui.js'

setTracingDisabled(true)

type Item = Record<string, any>

/** A `Model` answering each call from its prompt, through the SDK's own `ScriptedModel`. */
function promptModel(answer: (input: Item[]) => ScriptedModelResponse): Model {
  const scripted = (request: ModelRequest) =>
    new ScriptedModel([modelResponder(() => answer(request.input as Item[]))])
  return {
    getResponse: (request) => scripted(request).getResponse(request),
    getStreamedResponse: (request) => scripted(request).getStreamedResponse(request),
  }
}

test.group('OpenAI Agents runner | served through the AG-UI door', () => {
  test('HttpAgent: a handoff is a sub-agent (SUBAGENT_STARTED, its interrupt, SUBAGENT_FINISHED), the events conform', async ({
    assert,
    cleanup,
  }) => {
    const ran: unknown[] = []
    const mailer = new Agent({
      name: 'mailer',
      model: promptModel((input) =>
        input.at(-1)?.type === 'function_call_result' && input.at(-1)?.name === 'send_email'
          ? [assistantMessage('Sent.')]
          : [
              assistantMessage('I will send it. '),
              functionCall('send_email', { to: 'team@example.com' }, { callId: 'call_9' }),
            ]
      ),
      tools: [
        tool({
          name: 'send_email',
          description: 'Send an email',
          parameters: z.object({ to: z.string() }),
          needsApproval: true,
          execute: async (input) => {
            ran.push(input)
            return { sent: true }
          },
        }),
      ],
    })
    const triage = new Agent({
      name: 'triage',
      model: promptModel(() => [functionCall('transfer_to_mailer', {}, { callId: 'call_h' })]),
      handoffs: [mailer],
    })
    const { url, close } = await serveRuntime(
      { runner: openAiAgent({ agent: triage }) },
      (served, principal) => createAgUiFetchHandler(served.door, { basePath: '/agui', principal })
    )
    cleanup(close)
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice', 'X-AG-UI-Client-Version': '1.0.0' }, // sub-agents: 1.0
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
    })
    await client.runAgent()
    const first = recorder.events()
    await assertConforms(assert, first)
    const started = first.find((e) => e.type === 'SUBAGENT_STARTED')!
    assert.equal(started.name, 'mailer')
    // The handoff's call (its id as the door mints it) is the sub-agent's parent call.
    const handoff = first.find(
      (e) => e.type === 'TOOL_CALL_START' && e.toolCallName === 'transfer_to_mailer'
    )!
    assert.equal(started.parentToolCallId, handoff.toolCallId)
    const text = first.find((e) => e.type === 'TEXT_MESSAGE_CONTENT')!
    assert.equal(text.subagentRunId, started.subagentRunId)
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
    const finished = second.filter((e) => e.type === 'SUBAGENT_FINISHED')
    assert.lengthOf(finished, 1)
    assert.equal(finished[0].subagentRunId, started.subagentRunId)
    assert.equal(
      second
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
      'Sent.'
    )
  }).timeout(30_000)
})

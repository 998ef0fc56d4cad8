import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import {
  HttpAgent,
  buildResumeArray,
  runHttpRequest,
  transformHttpEventStream,
  type RunAgentInput,
} from '@ag-ui/client'
import { scriptedAgent, type ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { assertConforms, parseSse, recordingFetch, type WireEvent } from './helpers/agui.js'

async function setup(options: ScriptedAgentOptions = {}) {
  const served = await serveApp({ runner: scriptedAgent(options) })
  await resetTables(await served.app.container.make('lucid.db'))
  return served
}

/** The official 1.0 client, declared as such: the door serves it AG-UI 1.0 whole. */
const V1 = { 'X-AG-UI-Client-Version': '1.0.0' }

function agent(url: string, recorder: ReturnType<typeof recordingFetch>, user = 'alice') {
  return new HttpAgent({
    url: `${url}/agui`,
    threadId: `thread-${randomUUID()}`,
    headers: { 'x-user': user, ...V1 },
    fetch: recorder.fetch,
    initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
  })
}

const assistantText = (messages: any[]) =>
  messages
    .filter((m) => m.role === 'assistant' && typeof m.content === 'string')
    .map((m) => m.content)
    .join('')

/** Nothing server-side on the wire (invariant 8, docs/design.md): walk every serialized event. */
function assertNoSecrets(assert: any, events: WireEvent[]) {
  const wire = JSON.stringify(events)
  for (const secret of ['secret', 'decidedBy', 'alice', 'principal', 'checkpoint', 'sk-live']) {
    assert.notInclude(wire, secret)
  }
}

test.group('AG-UI over HTTP with the official client', () => {
  test('a run with text and tools streams to HttpAgent and passes the official checks', async ({
    assert,
  }) => {
    const { url } = await setup({ steps: ['reasoning', 'read'] })
    const recorder = recordingFetch()
    const client = agent(url, recorder)
    const { result } = await client.runAgent()
    assert.isUndefined(result)
    assert.equal(
      assistantText(client.messages),
      'Let me look at this week. Revenue was 42. All done.'
    )
    const call = client.messages.flatMap((m: any) => m.toolCalls ?? [])[0]
    assert.equal(call.function.name, 'search')
    assert.deepEqual(JSON.parse(call.function.arguments), { q: 'weekly numbers' })
    const toolMessage = client.messages.find((m: any) => m.role === 'tool') as any
    assert.equal(toolMessage.toolCallId, call.id)
    const events = recorder.events()
    await assertConforms(assert, events)
    assertNoSecrets(assert, events)
    assert.equal(events[0].type, 'RUN_STARTED')
    assert.equal(events.at(-1)!.type, 'RUN_FINISHED')
    assert.deepEqual(events.at(-1)!.outcome, { type: 'success' })
  })

  test('an approval interrupt answered with buildResumeArray: only the result, then success', async ({
    assert,
  }) => {
    const { url } = await setup({ steps: ['approval'] })
    const recorder = recordingFetch()
    const client = agent(url, recorder)
    await client.runAgent()
    assert.lengthOf(client.pendingInterrupts, 1)
    const [interrupt] = client.pendingInterrupts
    assert.equal(interrupt.reason, 'tool_call')
    const started = recorder.events().find((e) => e.type === 'TOOL_CALL_START')!
    assert.equal(interrupt.toolCallId, started.toolCallId)
    await assertConforms(assert, recorder.events())

    const resume = buildResumeArray(client.pendingInterrupts, {
      [interrupt.id]: { status: 'resolved', payload: { approved: true } },
    })
    await client.runAgent({ resume })
    const second = recorder.events()
    await assertConforms(assert, second)
    assertNoSecrets(assert, second)
    assert.notInclude(
      second.map((e) => e.type),
      'TOOL_CALL_START'
    )
    const results = second.filter((e) => e.type === 'TOOL_CALL_RESULT')
    assert.lengthOf(results, 1)
    assert.equal(results[0].toolCallId, interrupt.toolCallId)
    assert.deepEqual(second.at(-1)!.outcome, { type: 'success' })
    assert.lengthOf(client.pendingInterrupts, 0)
    assert.include(assistantText(client.messages), 'Sent. ')
  })

  test('a question set is answered against its responseSchema', async ({ assert }) => {
    const { url } = await setup({ steps: ['question'] })
    const recorder = recordingFetch()
    const client = agent(url, recorder)
    await client.runAgent()
    const [interrupt] = client.pendingInterrupts
    assert.equal(interrupt.reason, 'input_required')
    assert.deepEqual(
      (interrupt.responseSchema as any).properties.answers.properties.format.items.enum,
      ['pdf', 'csv']
    )
    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { answers: { format: ['csv'] } } },
      }),
    })
    await assertConforms(assert, recorder.events())
    assert.include(assistantText(client.messages), 'Format: csv. ')
  })

  test('a sub-agent that parks: suspended, then re-opened under the same id on resume', async ({
    assert,
  }) => {
    const { url } = await setup({ steps: ['child'] })
    const recorder = recordingFetch()
    const client = agent(url, recorder)
    await client.runAgent()
    const first = recorder.events()
    await assertConforms(assert, first)
    const sub = first.find((e) => e.type === 'SUBAGENT_STARTED')!
    const [interrupt] = client.pendingInterrupts
    assert.equal(interrupt.subagentRunId, sub.subagentRunId)
    assert.deepEqual(first.find((e) => e.type === 'SUBAGENT_FINISHED')!.outcome, {
      type: 'suspended',
      interruptIds: [interrupt.id],
    })
    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    const second = recorder.events()
    await assertConforms(assert, second)
    const reopened = second.find((e) => e.type === 'SUBAGENT_STARTED')!
    assert.equal(reopened.subagentRunId, sub.subagentRunId)
    assert.deepEqual(second.find((e) => e.type === 'SUBAGENT_FINISHED')!.outcome, {
      type: 'success',
    })
    assert.deepEqual(second.at(-1)!.outcome, { type: 'success' })
  })

  test('a connect() subclass re-attaches after the socket is cut mid-message', async ({
    assert,
  }) => {
    const { url } = await setup({ steps: ['reasoning', 'read'], tokensPerSecond: 200 })
    let seen = 0
    const recorder = recordingFetch((e) => e.type === 'TEXT_MESSAGE_CONTENT' && ++seen === 2)
    let runId = ''
    class ReattachingAgent extends HttpAgent {
      protected connect(_input: RunAgentInput) {
        return transformHttpEventStream(
          runHttpRequest(() =>
            recorder.fetch(`${url}/agui/runs/${runId}?after=${recorder.lastId}`, {
              method: 'GET',
              headers: { 'x-user': 'alice', 'Accept': 'text/event-stream' },
            })
          )
        )
      }
    }
    const client = new ReattachingAgent({
      url: `${url}/agui`,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'hi' }],
    })
    runId = randomUUID()
    await client.runAgent({ runId })
    assert.notEqual(
      assistantText(client.messages),
      'Let me look at this week. Revenue was 42. All done.'
    )
    assert.isDefined(recorder.lastId)
    await client.connectAgent()
    assert.equal(
      assistantText(client.messages),
      'Let me look at this week. Revenue was 42. All done.'
    )
    const call = client.messages.flatMap((m: any) => m.toolCalls ?? [])
    assert.lengthOf(call, 1)
    assert.deepEqual(JSON.parse(call[0].function.arguments), { q: 'weekly numbers' })
    const reattached = recorder.events()
    await assertConforms(assert, reattached)
    assert.equal(reattached[0].type, 'RUN_STARTED')
    assert.equal(reattached[0].runId, runId)
  })
})

test.group('AG-UI over HTTP: failures and disconnects', () => {
  test('a runner that throws: RUN_ERROR with a stable code and a fixed sentence, nothing else', async ({
    assert,
  }) => {
    const { url } = await setup({ failAt: 'start' })
    const recorder = recordingFetch()
    const client = agent(url, recorder)
    await client.runAgent().catch(() => {})
    const events = recorder.events()
    await assertConforms(assert, events)
    assertNoSecrets(assert, events)
    assert.deepEqual(events.at(-1), {
      type: 'RUN_ERROR',
      code: 'run_failed',
      message: 'The run stopped unexpectedly.',
    })
  })

  for (const abortOnDisconnect of [false, true]) {
    test(`a client that disconnects ${abortOnDisconnect ? 'cancels the run (abortOnDisconnect)' : 'leaves the run going'}`, async ({
      assert,
    }) => {
      const served = await serveApp({
        runner: scriptedAgent({ steps: ['reasoning', 'read'], tokensPerSecond: 100 }),
        agui: { abortOnDisconnect },
      })
      await resetTables(await served.app.container.make('lucid.db'))
      const recorder = recordingFetch((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      const client = agent(served.url, recorder)
      const runId = randomUUID()
      await client.runAgent({ runId })
      await served.agentStream.driver.settled()
      const full = parseSse(
        await (
          await fetch(`${served.url}/agui/runs/${runId}`, { headers: { 'x-user': 'alice', ...V1 } })
        ).text()
      ).map((e) => e.event)
      assert.deepEqual(
        full.at(-1)!.outcome,
        abortOnDisconnect ? { type: 'cancelled' } : { type: 'success' }
      )
    })
  }
})

test.group('AG-UI over HTTP: frontend tools', () => {
  /** Calls the client's `confirm_color` tool when offered; answers with what came back. */
  const clientToolAgent = {
    async start(ctx: any) {
      const { tools = [], toolResults = [] } = ctx.input
      if (toolResults.length > 0) {
        await ctx.writer.write({ t: 'text', v: `The client said ${toolResults[0].content}.` })
        return { status: 'finished' as const }
      }
      await ctx.writer.write({ t: 'text', v: 'Checking with you. ' })
      if (tools.some((tool: { name: string }) => tool.name === 'confirm_color')) {
        await ctx.writer.write({
          t: 'event',
          event: {
            kind: 'tool-input-available',
            id: 'call_color',
            name: 'confirm_color',
            input: { color: 'red' },
            toolKind: 'action',
          },
        })
      }
      return { status: 'finished' as const }
    },
    async resume() {
      return { status: 'finished' as const }
    },
  }
  const tool = {
    name: 'confirm_color',
    description: 'Ask the person to confirm a color',
    parameters: { type: 'object', properties: { color: { type: 'string' } } },
  }

  test('a call to a client tool ends the run with pendingToolCallIds; its result starts the next', async ({
    assert,
  }) => {
    const served = await serveApp({ runner: clientToolAgent, agui: { frontendTools: true } })
    await resetTables(await served.app.container.make('lucid.db'))
    const recorder = recordingFetch()
    const client = agent(served.url, recorder)
    let pending: string[] = []
    await client.runAgent(
      { tools: [tool] },
      {
        onRunFinishedEvent: ({ pendingToolCallIds }: any) => {
          pending = pendingToolCallIds ?? []
        },
      }
    )
    const first = recorder.events()
    await assertConforms(assert, first)
    const call = first.find((e) => e.type === 'TOOL_CALL_START')!
    assert.deepEqual(first.at(-1)!.outcome, {
      type: 'success',
      pendingToolCallIds: [call.toolCallId],
    })
    assert.deepEqual(pending, [call.toolCallId])

    // A tool message for a call nobody is waiting for is refused, and changes nothing.
    const forged = new HttpAgent({
      url: `${served.url}/agui`,
      threadId: client.threadId,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [
        ...client.messages,
        { id: 't-forged', role: 'tool', toolCallId: 'other-call', content: 'blue' },
      ] as any,
    })
    await forged.runAgent({ tools: [tool] }).catch(() => {})
    assert.deepEqual(
      recorder.events().map((e) => e.code),
      ['unknown_tool_call']
    )

    client.messages.push({
      id: 't1',
      role: 'tool',
      toolCallId: call.toolCallId,
      content: 'red it is',
    } as any)
    await client.runAgent({ tools: [tool] })
    const second = recorder.events()
    await assertConforms(assert, second)
    assert.deepEqual(second.at(-1)!.outcome, { type: 'success' })
    assert.include(assistantText(client.messages), 'The client said red it is.')
  })

  test('off by default: the client tools never reach the agent, no pendingToolCallIds', async ({
    assert,
  }) => {
    const served = await serveApp({ runner: clientToolAgent })
    await resetTables(await served.app.container.make('lucid.db'))
    const recorder = recordingFetch()
    await agent(served.url, recorder).runAgent({ tools: [tool] })
    const events = recorder.events()
    assert.notInclude(JSON.stringify(events), 'pendingToolCallIds')
    assert.notInclude(
      events.map((e) => e.type),
      'TOOL_CALL_START'
    )
  })
})

test.group('AG-UI over HTTP: MESSAGES_SNAPSHOT', () => {
  test('the thread transcript before RUN_FINISHED keeps the client history whole', async ({
    assert,
  }) => {
    const served = await serveApp({
      runner: scriptedAgent({ steps: ['read', 'approval'] }),
      agui: { messagesSnapshot: true },
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const recorder = recordingFetch()
    const client = agent(served.url, recorder)
    await client.runAgent()
    const first = recorder.events()
    await assertConforms(assert, first)
    const snapshot = first.find((e) => e.type === 'MESSAGES_SNAPSHOT')!
    assert.deepEqual(
      first.slice(-3).map((e) => e.type),
      ['STATE_SNAPSHOT', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED']
    )
    assert.deepEqual(
      snapshot.messages.map((m: any) => m.role),
      ['user', 'assistant', 'tool', 'assistant']
    )
    assert.equal(snapshot.messages[0].id, 'u1')
    const [interrupt] = client.pendingInterrupts
    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    await assertConforms(assert, recorder.events())
    // A second run on the thread: the snapshot has both runs, and the client keeps everything.
    client.messages.push({ id: 'u2', role: 'user', content: 'And again' } as any)
    await client.runAgent()
    const third = recorder.events()
    await assertConforms(assert, third)
    const roles = third.find((e) => e.type === 'MESSAGES_SNAPSHOT')!.messages.map((m: any) => m.id)
    assert.include(roles, 'u1')
    assert.include(roles, 'u2')
    assert.deepEqual(
      client.messages.filter((m: any) => m.role === 'user').map((m: any) => m.id),
      ['u1', 'u2']
    )
    assert.include(assistantText(client.messages), 'Revenue was 42. ')
    assert.include(assistantText(client.messages), 'Sent. ')
  })
})

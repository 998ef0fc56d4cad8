import { test } from '@japa/runner'
import { Agent, setTracingDisabled, tool, type Model, type ModelRequest } from '@openai/agents'
import {
  ScriptedModel,
  assistantMessage,
  functionCall,
  modelResponder,
  modelStreamResponder,
  type ScriptedModelResponse,
  type ScriptedModelStream,
} from '@openai/agents/testing'
import { z } from 'zod'
import { openAiAgent } from '../src/runners/openai_agents/index.js'
import { DENIAL_SENTENCES, restoredState } from '../src/runners/openai_agents/checkpoint.js'
import { CheckpointUnreadable } from '../src/runners/shared/checkpoint_unreadable.js'
import { framesToInput, runInput } from '../src/runners/openai_agents/input.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf } from './helpers/sink.js'

setTracingDisabled(true)

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }

type Item = Record<string, any>
type Answer = ScriptedModelResponse | { stream: ScriptedModelStream }

/**
 * A `Model` (the SDK's interface) that answers each call from its prompt, through the SDK's own
 * `ScriptedModel` (one per call); it keeps every prompt it was sent.
 */
class PromptModel implements Model {
  readonly prompts: Item[][] = []
  constructor(readonly answer: (input: Item[], request: ModelRequest) => Answer) {}
  #scripted(request: ModelRequest) {
    const input: Item[] =
      typeof request.input === 'string'
        ? [{ role: 'user', content: request.input }]
        : JSON.parse(JSON.stringify(request.input))
    this.prompts.push(input)
    const answer = this.answer(input, request)
    return new ScriptedModel([
      'stream' in answer
        ? modelStreamResponder(() => answer.stream)
        : modelResponder(() => answer as ScriptedModelResponse),
    ])
  }
  getResponse(request: ModelRequest) {
    return this.#scripted(request).getResponse(request)
  }
  getStreamedResponse(request: ModelRequest) {
    return this.#scripted(request).getStreamedResponse(request)
  }
}

const last = (input: Item[]) => input.at(-1) ?? {}
const resultText = (item: Item) =>
  typeof item.output === 'string' ? item.output : (item.output?.text ?? '')

/** The mailer: says it will send, calls send_email (needs approval), then says what happened. */
function mailer(name = 'mailer', callId = 'call_9') {
  const ran: unknown[] = []
  const model = new PromptModel((input) => {
    const newest = last(input)
    if (newest.type === 'function_call_result' && newest.name === 'send_email') {
      return [assistantMessage(resultText(newest).includes('"sent":true') ? 'Sent.' : 'Not sent.')]
    }
    return [
      assistantMessage('I will send it. '),
      functionCall('send_email', { to: 'team@example.com' }, { callId }),
    ]
  })
  const sendEmail = tool({
    name: 'send_email',
    description: 'Send an email',
    parameters: z.object({ to: z.string() }),
    needsApproval: true,
    execute: async (input) => {
      ran.push(input)
      return { sent: true, to: input.to }
    },
  })
  return { ran, model, agent: new Agent({ name, model, tools: [sendEmail] }) }
}

const kinds = (frames: any[]) =>
  frames.map((f) => (f.t === 'event' ? f.event.kind : f.t)).filter((k) => k !== 'text')
const events = (frames: any[], kind: string) =>
  frames.filter((f) => f.t === 'event' && f.event.kind === kind).map((f) => f.event)

test.group('OpenAI Agents runner', () => {
  test('a tool loop: text, reasoning, the call and its result become frames; the model sees the result', async ({
    assert,
  }) => {
    const searches: unknown[] = []
    const model = new PromptModel((input) =>
      last(input).type === 'function_call_result'
        ? [assistantMessage('Revenue was 42.')]
        : [
            {
              type: 'reasoning',
              id: 'rs_1',
              content: [{ type: 'input_text', text: 'The user wants the numbers.' }],
            },
            assistantMessage('Let me look. '),
            functionCall('search', { q: 'weekly numbers' }, { callId: 'call_1' }),
          ]
    )
    const search = tool({
      name: 'search',
      description: 'Search',
      parameters: z.object({ q: z.string() }),
      execute: async (input) => {
        searches.push(input)
        return { revenue: 42 }
      },
    })
    const agent = new Agent({ name: 'analyst', model, tools: [search] })
    const { driver, sink } = await setupRunner(openAiAgent({ agent }))
    const id = runId()
    const outcome = await (
      await driver.start({ runId: id, input: 'How did we do?', principal: alice })
    ).done
    assert.deepEqual(outcome, { status: 'finished' })
    const frames: any[] = await collect(sink.subscribe(id))
    assert.deepEqual(kinds(frames), [
      'step-start',
      'step-finish',
      'reasoning',
      'tool-input-available',
      'tool-output',
      'step-start',
      'step-finish',
    ])
    assert.equal(textOf(frames), 'Let me look. Revenue was 42.')
    assert.equal(events(frames, 'reasoning')[0].text, 'The user wants the numbers.')
    assert.deepInclude(events(frames, 'tool-input-available')[0], {
      id: 'call_1',
      name: 'search',
      input: { q: 'weekly numbers' },
      toolKind: 'read',
    })
    assert.deepEqual(events(frames, 'tool-output')[0], {
      kind: 'tool-output',
      id: 'call_1',
      output: { revenue: 42 },
    })
    assert.equal(events(frames, 'step-finish')[0].usage.requests, 1)
    assert.deepEqual(searches, [{ q: 'weekly numbers' }])
    assert.lengthOf(model.prompts, 2)
    assert.deepInclude(last(model.prompts[1]), { type: 'function_call_result', callId: 'call_1' })
  })

  test('an approval parks with the SDK state; approved with an edited input, the tool runs once with it', async ({
    assert,
  }) => {
    const mail = mailer()
    const { driver, sink, parking } = await setupRunner(openAiAgent({ agent: mail.agent }))
    const id = runId()
    const first = await (
      await driver.start({ runId: id, input: { message: 'Send the report' }, principal: alice })
    ).done
    assert.equal(first.status, 'parked')
    const checkpoint = (first as { checkpoint: any }).checkpoint
    assert.equal(checkpoint.runner, 'openai-agents')
    assert.equal(JSON.parse(checkpoint.state).currentAgent.name, 'mailer')
    assert.lengthOf(mail.ran, 0)
    const parked: any[] = await collect(sink.subscribe(id), { limit: 6, timeoutMs: 5_000 })
    const approval = parked.find((f) => f.t === 'approval')
    assert.deepInclude(approval, {
      runId: id,
      id: 'call_9',
      toolName: 'send_email',
      input: { to: 'team@example.com' },
      approver: 'requester',
    })
    assert.equal(approval.inputSchema.properties.to.type, 'string')
    assert.equal(events(parked, 'tool-input-available')[0].toolKind, 'action')

    await parking.decisions.approve(id, 'call_9', decider, { input: { to: 'boss@example.com' } })
    await driver.settled()
    assert.deepEqual(mail.ran, [{ to: 'boss@example.com' }])
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.lengthOf(events(frames, 'tool-output'), 1)
    assert.deepEqual(events(frames, 'tool-output')[0].output, {
      sent: true,
      to: 'boss@example.com',
    })
    // The model was called twice: once before the park, once after the tool ran.
    assert.lengthOf(mail.model.prompts, 2)
    const call = mail.model.prompts[1].find((item) => item.type === 'function_call')!
    assert.deepEqual(JSON.parse(call.arguments), { to: 'boss@example.com' })
  })

  test('a rejection: the tool never runs, the model gets the denial once, no second result is written', async ({
    assert,
  }) => {
    const mail = mailer()
    const { driver, sink, parking } = await setupRunner(openAiAgent({ agent: mail.agent }))
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send the report', principal: alice })
    ).done
    await parking.decisions.reject(id, 'call_9', decider)
    await driver.settled()
    assert.lengthOf(mail.ran, 0)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Not sent.')
    assert.lengthOf(events(frames, 'tool-output-denied'), 1)
    assert.lengthOf(events(frames, 'tool-output'), 0)
    const result = last(mail.model.prompts[1])
    assert.equal(result.type, 'function_call_result')
    assert.equal(resultText(result), DENIAL_SENTENCES.rejected)
  })

  test('a handoff is a sub-agent: its frames, its approval and its resume are the child run', async ({
    assert,
  }) => {
    const mail = mailer()
    const triage = new Agent({
      name: 'triage',
      model: new PromptModel(() => [functionCall('transfer_to_mailer', {}, { callId: 'call_h' })]),
      handoffs: [mail.agent],
    })
    const { driver, sink, parking } = await setupRunner(openAiAgent({ agent: triage }))
    const id = runId()
    const first = await (await driver.start({ runId: id, input: 'Send it', principal: alice })).done
    assert.equal(first.status, 'parked')
    const child = `${id}.h1`
    assert.deepEqual((first as { checkpoint: any }).checkpoint.scopes, [child])
    const parked: any[] = await collect(sink.subscribe(id), { limit: 10, timeoutMs: 5_000 })
    assert.deepEqual(events(parked, 'subagent-start'), [
      { kind: 'subagent-start', runId: child, name: 'mailer', parentToolCallId: 'call_h' },
    ])
    assert.deepInclude(events(parked, 'tool-input-available')[0], {
      id: 'call_h',
      name: 'transfer_to_mailer',
    })
    assert.equal(parked.find((f) => f.t === 'approval').runId, child)
    // The sub-agent opens while the handoff call is open (its parent call); the result follows.
    const at = (match: (f: any) => boolean) => parked.findIndex(match)
    const called = at((f) => f.event?.kind === 'tool-input-available' && f.event.id === 'call_h')
    const opened = at((f) => f.event?.kind === 'subagent-start')
    const answered = at((f) => f.event?.kind === 'tool-output' && f.event.id === 'call_h')
    assert.isTrue(called < opened && opened < answered, `${called} ${opened} ${answered}`)

    await parking.decisions.approve(child, 'call_9', decider)
    await driver.settled()
    assert.deepEqual(mail.ran, [{ to: 'team@example.com' }])
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.deepEqual(events(frames, 'subagent-finish'), [
      { kind: 'subagent-finish', runId: child, status: 'success' },
    ])
    const k = kinds(frames)
    assert.isBelow(k.lastIndexOf('tool-output'), k.indexOf('subagent-finish'))
  })

  test("agent.asTool(): the nested agent's approval parks the outer run; the edit reaches the nested call", async ({
    assert,
  }) => {
    const mail = mailer()
    const orchestrator = new Agent({
      name: 'orchestrator',
      model: new PromptModel((input) =>
        last(input).type === 'function_call_result'
          ? [assistantMessage(`Done: ${resultText(last(input))}`)]
          : [functionCall('mail_agent', { input: 'Send the report' }, { callId: 'call_outer' })]
      ),
      tools: [mail.agent.asTool({ toolName: 'mail_agent', toolDescription: 'Sends mail' })],
    })
    const { driver, sink, parking } = await setupRunner(openAiAgent({ agent: orchestrator }))
    const id = runId()
    const first = await (await driver.start({ runId: id, input: 'Go', principal: alice })).done
    assert.equal(first.status, 'parked')
    const parked: any[] = await collect(sink.subscribe(id), { limit: 8, timeoutMs: 5_000 })
    const approval = parked.find((f) => f.t === 'approval')
    assert.deepInclude(approval, { runId: id, id: 'call_9', toolName: 'send_email' })
    assert.lengthOf(
      parked.filter((f) => f.t === 'approval'),
      1
    )

    await parking.decisions.approve(id, 'call_9', decider, { input: { to: 'boss@example.com' } })
    await driver.settled()
    assert.deepEqual(mail.ran, [{ to: 'boss@example.com' }])
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'Done: Sent.')
    assert.deepEqual(events(frames, 'tool-output').at(-1).id, 'call_outer')
  })

  test('an event the runner does not know (a provider raw event) is skipped; the run goes on', async ({
    assert,
  }) => {
    const response = {
      id: 'resp_1',
      usage: { requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      output: [assistantMessage('Hello')],
    }
    const model = new PromptModel(() => ({
      stream: [
        { type: 'response_started' },
        { type: 'model', event: { type: 'response.something_new', secret: 'not for readers' } },
        { type: 'output_text_delta', delta: 'Hello' },
        { type: 'response_done', response },
      ] as any,
    }))
    const agent = new Agent({ name: 'greeter', model })
    const { driver, sink } = await setupRunner(openAiAgent({ agent }))
    const id = runId()
    const outcome = await (await driver.start({ runId: id, input: 'hi', principal: alice })).done
    assert.deepEqual(outcome, { status: 'finished' })
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'Hello')
    assert.deepEqual(kinds(frames), ['step-start', 'step-finish'])
    assert.notInclude(JSON.stringify(frames), 'something_new')
  })

  test('a checkpoint the SDK cannot read (the agent changed) fails the run with the fixed sentence', async ({
    assert,
  }) => {
    const before = mailer('mailer')
    const after = mailer('renamed')
    const errors: unknown[] = []
    let current: AgentRunner = openAiAgent({ agent: before.agent })
    const runner: AgentRunner = {
      start: (ctx) => current.start(ctx),
      resume: (ctx) => current.resume(ctx),
    }
    const { driver, sink, parking } = await setupRunner(runner)
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send the report', principal: alice })
    ).done
    // A deploy changed the agent while the run waited.
    current = openAiAgent({ agent: after.agent, onError: (error) => errors.push(error) })
    await parking.decisions.approve(id, 'call_9', decider)
    await driver.settled()
    const frames: any[] = await collect(sink.subscribe(id))
    const error = frames.find((f) => f.t === 'error')
    assert.deepEqual(
      { code: error.code, message: error.message },
      { code: 'checkpoint_unreadable', message: FAILURE_SENTENCES.checkpoint_unreadable }
    )
    assert.equal(
      FAILURE_SENTENCES.checkpoint_unreadable,
      "The run's checkpoint could not be read: the agent changed since the run paused."
    )
    assert.lengthOf(before.ran, 0)
    assert.lengthOf(after.ran, 0)
    assert.lengthOf(errors, 1)
    // Garbage is unreadable the same way, never a crash.
    for (const state of ['{}', 'not json', '{"$schemaVersion":"1.0"}']) {
      await assert.rejects(
        () =>
          restoredState(
            before.agent,
            { runner: 'openai-agents', state, scopes: [], handoffs: 0 },
            []
          ),
        CheckpointUnreadable as never
      )
    }
  })

  test('a stop aborts the SDK run: the model sees its signal, no tool runs, the run ends cancelled', async ({
    assert,
  }) => {
    let aborted = false
    const ran: unknown[] = []
    const model = new PromptModel((_input, request) => ({
      stream: (async function* () {
        yield { type: 'response_started' } as const
        yield { type: 'output_text_delta', delta: 'Hello ' } as const
        await new Promise<void>((resolve) => {
          if (request.signal?.aborted) return resolve()
          request.signal?.addEventListener('abort', () => resolve(), { once: true })
        })
        aborted = true
        throw new Error('aborted')
      })() as any,
    }))
    const search = tool({
      name: 'search',
      description: 'Search',
      parameters: z.object({}),
      execute: async () => ran.push(1),
    })
    const agent = new Agent({ name: 'slow', model, tools: [search] })
    const { driver, sink } = await setupRunner(openAiAgent({ agent }))
    const id = runId()
    const started = await driver.start({ runId: id, input: 'hi', principal: alice })
    const deadline = Date.now() + 5_000
    while (textOf(await collect(sink.replay(id) as any)) !== 'Hello ' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.isTrue(driver.stop(id))
    assert.deepEqual(await started.done, { status: 'cancelled' })
    assert.isTrue(aborted)
    assert.lengthOf(ran, 0)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'Hello ')
    assert.include(kinds(frames), 'cancelled')
  }).timeout(15_000)

  test('earlier turns as the SDK input: the person, the assistant, completed calls with their results', ({
    assert,
  }) => {
    const earlier: any[] = [
      {
        t: 'event',
        event: {
          kind: 'user-message',
          id: 'u1',
          parts: [
            { type: 'text', text: 'Look at this' },
            { type: 'file', mediaType: 'image/png', url: 'https://example.com/a.png' },
          ],
        },
      },
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'text', v: 'I will ' },
      { t: 'text', v: 'send it. ' },
      {
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'c1',
          name: 'send_email',
          input: { to: 'x' },
          toolKind: 'action',
        },
      },
      { t: 'approval', runId: 'r', id: 'c1', toolName: 'send_email', input: { to: 'x' } },
      { t: 'event', event: { kind: 'tool-output-denied', id: 'c1', status: 'rejected' } },
      // A call its turn never finished: left out.
      {
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'c2',
          name: 'search',
          input: {},
          toolKind: 'read',
        },
      },
      { t: 'text', v: 'Not sent.' },
    ]
    assert.deepEqual(framesToInput(earlier) as any[], [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Look at this' },
          { type: 'input_image', image: 'https://example.com/a.png' },
        ],
      },
      {
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'I will send it. ' }],
      },
      {
        type: 'function_call',
        callId: 'c1',
        name: 'send_email',
        status: 'completed',
        arguments: '{"to":"x"}',
      },
      {
        type: 'function_call_result',
        callId: 'c1',
        name: 'send_email',
        status: 'completed',
        output: { type: 'text', text: DENIAL_SENTENCES.rejected },
      },
      {
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Not sent.' }],
      },
    ])
    // This run's message, the client's context first in it (never a system message).
    const items = runInput([], [], {
      message: 'What did I ask?',
      context: [{ description: 'page', value: '<b>home</b>' }],
    }) as any[]
    assert.lengthOf(items, 1)
    assert.equal(items[0].role, 'user')
    assert.match(items[0].content[0].text, /^Context the client application sent/)
    assert.notInclude(items[0].content[0].text, '<b>')
    assert.deepEqual(items[0].content[1], { type: 'input_text', text: 'What did I ask?' })
  })
})

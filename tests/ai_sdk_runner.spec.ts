import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from '@japa/runner'
import { jsonSchema, streamText, tool, ToolLoopAgent } from 'ai'
import { aiSdkAgent, askTool } from '../src/runners/ai_sdk/index.js'
import { DENIAL_SENTENCES } from '../src/runners/ai_sdk/denial.js'
import { framesToMessages } from '../src/runners/ai_sdk/history.js'
import { inputMessages } from '../src/runners/ai_sdk/input.js'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId } from './helpers/sink.js'
import {
  emailScenario,
  finish,
  scriptedModel,
  text,
  toolCall,
  type Turn,
} from './helpers/ai_sdk.js'
import { Replica } from './helpers/replica.js'

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }

const objectSchema = <T>() =>
  jsonSchema<T>({ type: 'object', properties: {}, additionalProperties: true })

/** A send_email tool that needs approval and counts (and keeps) every input it ran with. */
function sendEmail() {
  const ran: unknown[] = []
  return {
    ran,
    tool: tool({
      description: 'Send an email',
      inputSchema: objectSchema<{ to: string }>(),
      needsApproval: true,
      execute: async (input) => {
        ran.push(input)
        return { sent: true, to: input.to }
      },
    }),
  }
}

const kinds = (frames: any[]) =>
  frames.map((f) => (f.t === 'event' ? f.event.kind : f.t)).filter((k) => k !== 'text')
const textOf = (frames: any[]) =>
  frames
    .filter((f) => f.t === 'text')
    .map((f) => f.v)
    .join('')
/** The model messages of a prompt, content parts simplified to what the test checks. */
const promptOf = (call: { prompt: any[] }) =>
  (JSON.parse(JSON.stringify(call.prompt)) as any[]).map((m) => ({
    role: m.role as string,
    parts: m.content,
  }))

test.group('AI SDK runner', () => {
  test('a multi-step tool loop: every part becomes its frame, the model sees the tool result', async ({
    assert,
  }) => {
    const searches: unknown[] = []
    const model = scriptedModel([
      [
        { type: 'reasoning-start', id: 'r1' },
        { type: 'reasoning-delta', id: 'r1', delta: 'The user wants ' },
        { type: 'reasoning-delta', id: 'r1', delta: 'the numbers.' },
        { type: 'reasoning-end', id: 'r1' },
        ...text('Let me look. '),
        ...toolCall('call_1', 'search', { q: 'weekly numbers' }),
        ...finish('tool-calls'),
      ],
      [
        ...text('Revenue was 42.'),
        {
          type: 'source',
          sourceType: 'url',
          id: 's1',
          url: 'https://example.com/r',
          title: 'Report',
        },
        {
          type: 'source',
          sourceType: 'document',
          id: 's2',
          mediaType: 'application/pdf',
          title: 'Q3',
          filename: 'q3.pdf',
        },
        { type: 'file', mediaType: 'text/plain', data: 'aGVsbG8=' },
        ...finish(),
      ],
    ] as Turn[])
    const search = tool({
      inputSchema: objectSchema<{ q: string }>(),
      execute: async (input) => {
        searches.push(input)
        return { revenue: 42 }
      },
    })
    const { driver, sink } = await setupRunner(aiSdkAgent({ model, tools: { search } }))
    const id = runId()
    const outcome = await (
      await driver.start({ runId: id, input: 'How did we do?', principal: alice })
    ).done
    assert.deepEqual(outcome, { status: 'finished' })
    const frames: any[] = await collect(sink.subscribe(id))
    // The tool's start is committed before its `execute` runs, once (the SDK runs a call as the
    // model streams it: the start may come before the call's own events).
    const started = kinds(frames).filter((kind) => kind === 'tool-execution-start')
    assert.lengthOf(started, 1)
    assert.isBelow(
      kinds(frames).indexOf('tool-execution-start'),
      kinds(frames).indexOf('tool-output')
    )
    assert.deepEqual(kinds(frames.filter((f) => f.event?.kind !== 'tool-execution-start')), [
      'step-start',
      'reasoning',
      'tool-input-start',
      'tool-input-delta',
      'tool-input-delta',
      'tool-input-available',
      'tool-output',
      'step-finish',
      'step-start',
      'source',
      'source',
      'file',
      'step-finish',
    ])
    assert.equal(textOf(frames), 'Let me look. Revenue was 42.')
    const event = (kind: string) => frames.filter((f) => f.event?.kind === kind).map((f) => f.event)
    assert.deepEqual(event('reasoning')[0].text, 'The user wants the numbers.')
    assert.deepInclude(event('tool-input-available')[0], {
      id: 'call_1',
      name: 'search',
      input: { q: 'weekly numbers' },
      toolKind: 'read',
    })
    assert.deepEqual(event('tool-output')[0].output, { revenue: 42 })
    assert.deepEqual(searches, [{ q: 'weekly numbers' }])
    assert.deepEqual(event('source'), [
      {
        kind: 'source',
        id: 's1',
        sourceType: 'url',
        url: 'https://example.com/r',
        title: 'Report',
      },
      {
        kind: 'source',
        id: 's2',
        sourceType: 'document',
        title: 'Q3',
        mediaType: 'application/pdf',
        filename: 'q3.pdf',
      },
    ])
    assert.deepEqual(event('file'), [
      { kind: 'file', mediaType: 'text/plain', url: 'data:text/plain;base64,aGVsbG8=' },
    ])
    const usage = event('step-finish')[0]
    assert.equal(usage.model, 'scripted')
    assert.equal(usage.usage.inputTokens, 10)
    assert.equal(usage.usage.outputTokens, 5)
    // The second model call got the tool's result after its call.
    assert.lengthOf(model.doStreamCalls, 2)
    const second = promptOf(model.doStreamCalls[1])
    assert.deepEqual(
      second.map((m) => m.role),
      ['user', 'assistant', 'tool']
    )
    assert.deepInclude(second[2].parts[0], { type: 'tool-result', toolCallId: 'call_1' })
    assert.deepEqual(second[2].parts[0].output, { type: 'json', value: { revenue: 42 } })
  })

  test('the conversation rebuilt from stored frames is the prompt the SDK itself sent next', async ({
    assert,
  }) => {
    // A continuous run of three model calls: the third call's prompt is what the AI SDK built
    // from its own response messages. Rebuilt from the frames stored up to that call, the same.
    const turns = [
      [
        { type: 'reasoning-start', id: 'r1' },
        { type: 'reasoning-delta', id: 'r1', delta: 'Numbers first.' },
        { type: 'reasoning-end', id: 'r1' },
        ...text('Let me look. '),
        ...toolCall('call_1', 'search', { q: 'weekly numbers' }),
        ...toolCall('call_2', 'search', { q: 'last week' }),
        ...finish('tool-calls'),
      ],
      [...text('Almost. '), ...toolCall('call_3', 'broken', {}), ...finish('tool-calls')],
      [...text('Revenue was 42.'), ...finish()],
    ] as Turn[]
    const tools = {
      search: tool({
        inputSchema: objectSchema<{ q: string }>(),
        execute: async (input) => (input.q === 'last week' ? 'forty' : { revenue: 42 }),
      }),
      broken: tool({
        inputSchema: objectSchema<object>(),
        execute: async (): Promise<string> => {
          throw new Error('the tool failed')
        },
      }),
    }
    const model = scriptedModel(turns)
    const { driver, sink } = await setupRunner(aiSdkAgent({ model, tools }))
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'How did we do?', principal: alice })
    ).done
    assert.lengthOf(model.doStreamCalls, 3)
    const frames: any[] = await collect(sink.subscribe(id))
    const lastStep = frames.findLastIndex((f) => f.event?.kind === 'step-start')
    const rebuilt = framesToMessages(frames.slice(0, lastStep))
    const replay = scriptedModel([turns[2]])
    const result = streamText({
      model: replay,
      tools,
      messages: [...(await inputMessages('How did we do?')), ...rebuilt],
    })
    await result.consumeStream()
    assert.deepEqual(promptOf(replay.doStreamCalls[0]), promptOf(model.doStreamCalls[2]))
  })

  test('an approval parks; approved with an edited input, the tool runs once with it', async ({
    assert,
  }) => {
    const email = sendEmail()
    const model = scriptedModel([
      [
        ...text('I will send it. '),
        ...toolCall('call_9', 'send_email', { to: 'team@example.com' }),
        ...finish('tool-calls'),
      ],
      [...text('Sent.'), ...finish()],
    ] as Turn[])
    const { driver, sink, parking } = await setupRunner(
      aiSdkAgent({ model, tools: { send_email: email.tool }, approval: { approver: 'requester' } })
    )
    const id = runId()
    const first = await (
      await driver.start({
        runId: id,
        input: { message: 'Send the report', context: [] },
        principal: alice,
      })
    ).done
    assert.equal(first.status, 'parked')
    assert.lengthOf(email.ran, 0)
    const parked: any[] = await collect(sink.subscribe(id))
    const approval = parked.find((f) => f.t === 'approval')
    assert.deepInclude(approval, {
      runId: id,
      id: 'call_9',
      toolName: 'send_email',
      input: { to: 'team@example.com' },
      approver: 'requester',
    })
    assert.equal(
      parked.find((f) => f.event?.kind === 'tool-input-available').event.toolKind,
      'action'
    )

    await parking.decisions.approve(id, 'call_9', decider, { input: { to: 'boss@example.com' } })
    await driver.settled()
    assert.deepEqual(email.ran, [{ to: 'boss@example.com' }])
    assert.lengthOf(model.doStreamCalls, 2)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    const outputs = frames.filter((f) => f.event?.kind === 'tool-output')
    assert.lengthOf(outputs, 1)
    assert.deepEqual(outputs[0].event.output, { sent: true, to: 'boss@example.com' })
    // The resumed model call: the user message, the call (with the input it ran with), its result.
    const prompt = promptOf(model.doStreamCalls[1])
    assert.deepEqual(
      prompt.map((m) => m.role),
      ['user', 'assistant', 'tool']
    )
    assert.deepEqual(prompt[0].parts, [{ type: 'text', text: 'Send the report' }])
    const call = prompt[1].parts.find((p: any) => p.type === 'tool-call')
    assert.deepInclude(call, { toolCallId: 'call_9', toolName: 'send_email' })
    assert.deepEqual(call.input, { to: 'boss@example.com' })
    assert.deepEqual(prompt[1].parts[0], { type: 'text', text: 'I will send it. ' })
    assert.deepEqual(prompt[2].parts, [
      {
        type: 'tool-result',
        toolCallId: 'call_9',
        toolName: 'send_email',
        output: { type: 'json', value: { sent: true, to: 'boss@example.com' } },
      },
    ])
  })

  test('two parks in a row: each approved call runs once, the second resume sees both', async ({
    assert,
  }) => {
    const email = sendEmail()
    const model = scriptedModel([
      [...toolCall('call_a', 'send_email', { to: 'a@example.com' }), ...finish('tool-calls')],
      [...toolCall('call_b', 'send_email', { to: 'b@example.com' }), ...finish('tool-calls')],
      [...text('One sent, one not.'), ...finish()],
    ] as Turn[])
    const { driver, sink, parking } = await setupRunner(
      aiSdkAgent({ model, tools: { send_email: email.tool } })
    )
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send both', principal: alice })
    ).done
    await parking.decisions.approve(id, 'call_a', decider)
    await driver.settled()
    assert.deepEqual(email.ran, [{ to: 'a@example.com' }])
    await parking.decisions.reject(id, 'call_b', decider)
    await driver.settled()
    assert.deepEqual(email.ran, [{ to: 'a@example.com' }])
    assert.lengthOf(model.doStreamCalls, 3)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'One sent, one not.')
    assert.lengthOf(
      frames.filter((f) => f.event?.kind === 'tool-output'),
      1
    )
    const prompt = promptOf(model.doStreamCalls[2])
    assert.deepEqual(
      prompt.map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant', 'tool']
    )
    assert.deepEqual(prompt[2].parts[0].output, {
      type: 'json',
      value: { sent: true, to: 'a@example.com' },
    })
    assert.deepEqual(prompt[4].parts[0].output, {
      type: 'execution-denied',
      reason: DENIAL_SENTENCES.rejected,
    })
  })

  test('a ToolLoopAgent: the same parking and resume through its stream()', async ({ assert }) => {
    const email = sendEmail()
    const model = scriptedModel([
      [...toolCall('call_9', 'send_email', { to: 'team@example.com' }), ...finish('tool-calls')],
      [...text('Sent.'), ...finish()],
    ] as Turn[])
    const agent = new ToolLoopAgent({
      model,
      instructions: 'You send emails.',
      tools: { send_email: email.tool },
    })
    const { driver, sink, parking } = await setupRunner(aiSdkAgent({ agent }))
    const id = runId()
    const first = await (await driver.start({ runId: id, input: 'Send it', principal: alice })).done
    assert.equal(first.status, 'parked')
    await parking.decisions.approve(id, 'call_9', decider)
    await driver.settled()
    assert.deepEqual(email.ran, [{ to: 'team@example.com' }])
    assert.equal(textOf(await collect(sink.subscribe(id))), 'Sent.')
    const prompt = promptOf(model.doStreamCalls[1])
    assert.deepEqual(
      prompt.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool']
    )
  })

  test('a denial: the tool never runs, the model is told as the AI SDK tells it, once', async ({
    assert,
  }) => {
    const email = sendEmail()
    const model = scriptedModel([
      [...toolCall('call_9', 'send_email', { to: 'team@example.com' }), ...finish('tool-calls')],
      [...text('Understood, not sent.'), ...finish()],
    ] as Turn[])
    const { driver, sink, parking } = await setupRunner(
      aiSdkAgent({ model, tools: { send_email: email.tool } })
    )
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send it', principal: alice })
    ).done
    await parking.decisions.reject(id, 'call_9', decider, { reason: 'Not this week.' })
    await driver.settled()
    assert.lengthOf(email.ran, 0)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.lengthOf(
      frames.filter((f) => f.event?.kind === 'tool-output-denied'),
      1
    )
    assert.equal(textOf(frames), 'Understood, not sent.')
    const prompt = promptOf(model.doStreamCalls[1])
    assert.deepEqual(prompt.at(-1)!.parts, [
      {
        type: 'tool-result',
        toolCallId: 'call_9',
        toolName: 'send_email',
        output: { type: 'execution-denied', reason: 'Not this week.' },
      },
    ])
  })

  test('an expired approval: the model gets the fixed sentence', async ({ assert }) => {
    const email = sendEmail()
    const model = scriptedModel([
      [...toolCall('call_9', 'send_email', { to: 'team@example.com' }), ...finish('tool-calls')],
      [...text('It expired.'), ...finish()],
    ] as Turn[])
    const { driver, parking } = await setupRunner(
      aiSdkAgent({ model, tools: { send_email: email.tool }, approval: { expiresInMs: 3_600_000 } })
    )
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send it', principal: alice })
    ).done
    await parking.decisions.expire(id, 'call_9')
    await driver.settled()
    assert.lengthOf(email.ran, 0)
    const prompt = promptOf(model.doStreamCalls[1])
    assert.deepEqual(prompt.at(-1)!.parts[0].output, {
      type: 'execution-denied',
      reason: DENIAL_SENTENCES.expired,
    })
  })

  test('a question set through the asking tool: the answers are the call result', async ({
    assert,
  }) => {
    const model = scriptedModel([
      [
        ...toolCall('call_q', 'ask', {
          preamble: 'Two quick questions.',
          questions: [
            {
              id: 'format',
              prompt: 'Which format?',
              options: [
                { value: 'pdf', label: 'PDF' },
                { value: 'csv', label: 'CSV' },
              ],
              defaults: ['pdf'],
            },
          ],
        }),
        ...finish('tool-calls'),
      ],
      [...text('CSV it is.'), ...finish()],
    ] as Turn[])
    const { driver, sink, parking } = await setupRunner(
      aiSdkAgent({ model, tools: { ask: askTool() } })
    )
    const id = runId()
    const first = await (
      await driver.start({ runId: id, input: 'Make the report', principal: alice })
    ).done
    assert.equal(first.status, 'parked')
    const parked: any[] = await collect(sink.subscribe(id))
    const asked = parked.find((f) => f.t === 'elicitation')
    assert.equal(asked.id, 'call_q')
    assert.equal(asked.request.preamble, 'Two quick questions.')
    assert.equal(asked.request.questions[0].id, 'format')

    await parking.decisions.answer(id, 'call_q', decider, { answers: { format: ['csv'] } })
    await driver.settled()
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'CSV it is.')
    const prompt = promptOf(model.doStreamCalls[1])
    assert.deepEqual(
      prompt.map((m) => m.role),
      ['user', 'assistant', 'tool']
    )
    assert.deepEqual(prompt[2].parts[0].output, {
      type: 'json',
      value: { answers: { format: ['csv'] }, skipped: false },
    })
  })

  test('a model stream error: an error frame with a fixed sentence, never the error text', async ({
    assert,
  }) => {
    const model = scriptedModel([
      [
        ...text('Starting. '),
        { type: 'error', error: new Error('secret: sk-live-123') },
        ...finish(),
      ],
    ] as Turn[])
    const errors: unknown[] = []
    const { driver, sink } = await setupRunner(
      aiSdkAgent({ model, onError: (error) => errors.push(error) })
    )
    const id = runId()
    const outcome = await (await driver.start({ runId: id, input: 'Go', principal: alice })).done
    assert.deepEqual(outcome, { status: 'failed', code: 'run_failed' })
    const frames: any[] = await collect(sink.subscribe(id))
    assert.deepInclude(frames.at(-1), {
      t: 'error',
      code: 'run_failed',
      message: FAILURE_SENTENCES.run_failed,
    })
    assert.notInclude(JSON.stringify(frames), 'sk-live')
    assert.lengthOf(errors, 1)
  })
})

test.group('AI SDK runner | a replica dies between the approval and the resume', () => {
  test('kill -9 after the claim: another process resumes, the tool runs once, the model gets the rebuilt history', async ({
    assert,
    fs,
  }) => {
    const log = join(fs.basePath, 'tool.log')
    await fs.create('tool.log', '')
    const { model, runner } = await emailScenario(log, 'after')
    const { parking, sink, driver } = await setupRunner(runner, { claimLeaseMs: 300 })
    const replica = await Replica.start({ claimLeaseMs: 300 } as any, {
      script: 'aiSdk',
      env: { TOOL_LOG: log },
    })
    const id = runId()
    const started = await replica.call({ op: 'start', runId: id, principal: alice })
    assert.equal(started.result, 'parked')
    const exited = new Promise((resolve) => replica.child.once('exit', resolve))
    replica.child.send({
      id: 99,
      op: 'claimThenDie',
      runId: id,
      itemId: 'call_9',
      principal: alice,
    })
    await exited
    assert.equal(replica.child.signalCode, 'SIGKILL')
    assert.equal(await readFile(log, 'utf8'), '') // the process that parked never ran the tool
    // Once the dead replica's claim lapses, this process takes the resume.
    await new Promise((resolve) => setTimeout(resolve, 350))
    assert.equal(await parking.sweeper.resumeReady(), 1)
    await driver.settled()
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    const lines = (await readFile(log, 'utf8')).trim().split('\n')
    assert.deepEqual(lines, [`${process.pid} {"to":"team@example.com"}`])
    // This process's model was called once, with the conversation rebuilt from stored frames.
    assert.lengthOf(model.doStreamCalls, 1)
    assert.deepEqual(promptOf(model.doStreamCalls[0]), [
      { role: 'user', parts: [{ type: 'text', text: 'Send the weekly report' }] },
      {
        role: 'assistant',
        parts: [
          { type: 'text', text: 'I will send it. ' },
          {
            type: 'tool-call',
            toolCallId: 'call_9',
            toolName: 'send_email',
            input: { to: 'team@example.com' },
          },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            toolCallId: 'call_9',
            toolName: 'send_email',
            output: { type: 'json', value: { sent: true } },
          },
        ],
      },
    ])
  }).timeout(30_000)
})

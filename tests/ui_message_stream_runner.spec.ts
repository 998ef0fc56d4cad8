import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import {
  convertToModelMessages,
  jsonSchema,
  stepCountIs,
  streamText,
  tool,
  type UIMessage,
  type UIMessageChunk,
} from 'ai'
import { uiMessageStreamAgent } from '../src/runners/ui_message_stream/index.js'
import { UiChunkReader } from '../src/runners/ui_message_stream/chunks.js'
import { framesToUiMessages } from '../src/runners/ui_message_stream/messages.js'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { emailModel } from '../demo/agents/ai_sdk_model.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf } from './helpers/sink.js'

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }
const said = (text: string) => ({
  id: `u-${randomUUID()}`,
  parts: [{ type: 'text' as const, text }],
})
const kinds = (frames: any[]) =>
  frames.map((f) => (f.t === 'event' ? f.event.kind : f.t)).filter((k) => k !== 'text')
const promptOf = (call: { prompt: any[] }) =>
  (JSON.parse(JSON.stringify(call.prompt)) as any[]).map((m) => ({
    role: m.role,
    parts: m.content,
  }))

/** The email scenario's producer, keeping the messages of every call and the model's prompts. */
function emailProducer() {
  const sent: unknown[] = []
  const calls: UIMessage[][] = []
  const model = emailModel()
  const sendEmail = tool({
    inputSchema: jsonSchema<{ to: string }>({
      type: 'object',
      properties: { to: { type: 'string' } },
    }),
    needsApproval: true,
    execute: async (input) => {
      sent.push(input)
      return { sent: true }
    },
  })
  const runner = uiMessageStreamAgent({
    stream: async ({ messages }) => {
      calls.push(structuredClone(messages))
      return streamText({
        model,
        tools: { send_email: sendEmail },
        messages: await convertToModelMessages(messages),
        stopWhen: stepCountIs(5),
      }).toUIMessageStream()
    },
  })
  return { sent, calls, model, runner }
}

test.group('UI message stream runner', () => {
  test('a tool-approval-request parks; approved, the stream is called again with approval-responded and the tool runs once', async ({
    assert,
  }) => {
    const { sent, calls, model, runner } = emailProducer()
    const { driver, sink, parking } = await setupRunner(runner)
    const id = runId()
    const first = await (
      await driver.start({
        runId: id,
        principal: alice,
        userMessage: said('Send the weekly report'),
      })
    ).done
    assert.equal(first.status, 'parked')
    const parked: any[] = await collect(sink.subscribe(id))
    assert.deepEqual(kinds(parked).slice(1), [
      'step-start',
      'tool-input-start',
      'tool-input-delta',
      'tool-input-available',
      'approval',
      'step-finish',
    ])
    assert.deepInclude(
      parked.find((f) => f.t === 'approval'),
      {
        runId: id,
        id: 'call_1',
        toolName: 'send_email',
        input: { to: 'team@example.com' },
        approver: 'requester',
      }
    )
    assert.lengthOf(sent, 0)
    assert.deepEqual(
      calls[0].map((m) => m.role),
      ['user']
    )

    await parking.decisions.approve(id, 'call_1', decider, { input: { to: 'boss@example.com' } })
    await driver.settled()
    assert.deepEqual(sent, [{ to: 'boss@example.com' }])
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.deepEqual(
      frames.filter((f) => f.event?.kind === 'tool-output').map((f) => f.event.output),
      [{ sent: true }]
    )
    // The resume's messages: the call's part approval-responded, with the id the stream asked under.
    const part: any = calls[1][1].parts.find((p: any) => p.toolCallId === 'call_1')
    assert.equal(part.type, 'tool-send_email')
    assert.equal(part.state, 'approval-responded')
    assert.deepEqual(part.input, { to: 'boss@example.com' })
    assert.equal(part.approval.approved, true)
    assert.isString(part.approval.id)
    // The model was called once more, with the call's result.
    assert.lengthOf(model.doStreamCalls, 2)
    assert.deepEqual(
      promptOf(model.doStreamCalls[1]).map((m) => m.role),
      ['user', 'assistant', 'tool']
    )
  })

  test('a rejection: approval-responded approved false with the reason; one denial; the model says it was not sent', async ({
    assert,
  }) => {
    const { sent, calls, runner } = emailProducer()
    const { driver, sink, parking } = await setupRunner(runner)
    const id = runId()
    await (
      await driver.start({
        runId: id,
        principal: alice,
        userMessage: said('Send the weekly report'),
      })
    ).done
    await parking.decisions.reject(id, 'call_1', decider, { reason: 'Not this week.' })
    await driver.settled()
    assert.lengthOf(sent, 0)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Not sent.')
    assert.lengthOf(
      frames.filter((f) => f.event?.kind === 'tool-output-denied'),
      1
    )
    const part: any = calls[1][1].parts.find((p: any) => p.toolCallId === 'call_1')
    assert.equal(part.state, 'approval-responded')
    assert.deepInclude(part.approval, { approved: false, reason: 'Not this week.' })
  })

  test('chunks become frames: data parts, sources, files, tool input errors; transient, preliminary and unknown chunks write nothing', ({
    assert,
  }) => {
    const reader = new UiChunkReader('run-1')
    const chunks = [
      { type: 'start', messageId: 'm1' },
      { type: 'start-step' },
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-delta', id: 'r', delta: 'Think ' },
      { type: 'reasoning-delta', id: 'r', delta: 'hard.' },
      { type: 'reasoning-end', id: 'r' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Hi' },
      { type: 'text-end', id: 't' },
      { type: 'data-weather', id: 'w1', data: { c: 21 } },
      { type: 'data-progress', data: { p: 1 }, transient: true },
      { type: 'source-url', sourceId: 's1', url: 'https://example.com' },
      { type: 'file', url: 'data:text/plain;base64,aGk=', mediaType: 'text/plain' },
      {
        type: 'tool-input-error',
        toolCallId: 'c1',
        toolName: 'x',
        input: 'bad',
        errorText: 'invalid',
      },
      { type: 'tool-input-available', toolCallId: 'c2', toolName: 'y', input: {} },
      {
        type: 'tool-output-available',
        toolCallId: 'c2',
        output: { partial: 1 },
        preliminary: true,
      },
      { type: 'tool-output-available', toolCallId: 'c2', output: { done: 1 } },
      { type: 'tool-output-available', toolCallId: 'c2', output: { again: 1 } },
      { type: 'something-new', payload: 1 },
      { type: 'message-metadata', messageMetadata: {} },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'stop' },
    ] as unknown as UIMessageChunk[]
    const frames = chunks.flatMap((chunk) => reader.push(chunk))
    assert.deepEqual(frames, [
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'event', event: { kind: 'reasoning', text: 'Think hard.' } },
      { t: 'text', v: 'Hi' },
      { t: 'component', name: 'weather', data: { c: 21 }, id: 'w1' },
      {
        t: 'event',
        event: { kind: 'source', id: 's1', sourceType: 'url', url: 'https://example.com' },
      },
      {
        t: 'event',
        event: { kind: 'file', mediaType: 'text/plain', url: 'data:text/plain;base64,aGk=' },
      },
      {
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'c1',
          name: 'x',
          input: 'bad',
          toolKind: 'read',
        },
      },
      { t: 'event', event: { kind: 'tool-output-error', id: 'c1', error: 'invalid' } },
      {
        t: 'event',
        event: { kind: 'tool-input-available', id: 'c2', name: 'y', input: {}, toolKind: 'read' },
      },
      { t: 'event', event: { kind: 'tool-output', id: 'c2', output: { done: 1 } } },
      { t: 'event', event: { kind: 'step-finish' } },
    ] as any)
    assert.isFalse(reader.failed)
  })

  test('stored frames as UI messages: a decided call goes back approval-responded with the approval as the stream asked it (signature kept)', ({
    assert,
  }) => {
    const frames = [
      {
        t: 'event',
        event: {
          kind: 'user-message',
          id: 'u1',
          parts: [
            { type: 'text', text: 'Send it' },
            { type: 'file', mediaType: 'image/png', url: 'https://example.com/a.png' },
          ],
        },
      },
      { t: 'event', event: { kind: 'step-start' } },
      { t: 'text', v: 'I will ' },
      { t: 'text', v: 'send it.' },
      {
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'call_1',
          name: 'send_email',
          input: { to: 'a@example.com' },
          toolKind: 'read',
        },
      },
      {
        t: 'approval',
        runId: 'r',
        id: 'call_1',
        toolName: 'send_email',
        input: { to: 'a@example.com' },
      },
      { t: 'event', event: { kind: 'approval-settled', id: 'call_1', status: 'rejected' } },
      { t: 'event', event: { kind: 'tool-output-denied', id: 'call_1', status: 'rejected' } },
    ] as any[]
    const asked = new Map([['call_1', { id: 'approval-7', signature: 'sig-1' }]])
    const [user, assistant] = framesToUiMessages(
      frames,
      'r',
      asked,
      new Map([['call_1', { approval: asked.get('call_1')!, approved: false, reason: 'No.' }]])
    )
    assert.deepEqual(user, {
      id: 'u1',
      role: 'user',
      parts: [
        { type: 'text', text: 'Send it' },
        { type: 'file', mediaType: 'image/png', url: 'https://example.com/a.png' },
      ],
    })
    assert.deepEqual(assistant.parts, [
      { type: 'step-start' },
      { type: 'text', text: 'I will send it.', state: 'done' },
      {
        type: 'tool-send_email',
        toolCallId: 'call_1',
        state: 'approval-responded',
        input: { to: 'a@example.com' },
        approval: { id: 'approval-7', signature: 'sig-1', approved: false, reason: 'No.' },
      },
    ] as any)
    // Without a decision to hand back (an earlier turn), the stored denial is the part's state.
    const earlier = framesToUiMessages(frames, 'c', asked)[1].parts.at(-1) as any
    assert.equal(earlier.state, 'output-denied')
    assert.deepEqual(earlier.approval, {
      id: 'approval-7',
      approved: false,
      reason: 'A person rejected this tool call; it did not run.',
    })
  })

  test('an error chunk fails the run with the fixed sentence; its text goes to onError only', async ({
    assert,
  }) => {
    const errors: unknown[] = []
    const runner = uiMessageStreamAgent({
      stream: () =>
        new ReadableStream<UIMessageChunk>({
          start(controller) {
            controller.enqueue({ type: 'text-start', id: 't' })
            controller.enqueue({ type: 'text-delta', id: 't', delta: 'Starting. ' })
            controller.enqueue({ type: 'error', errorText: 'secret: sk-live-123' })
            controller.close()
          },
        }),
      onError: (error) => errors.push(error),
    })
    const { driver, sink } = await setupRunner(runner)
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
    assert.deepEqual(errors, ['secret: sk-live-123'])
  })

  test('a checkpoint it cannot read fails the resume with checkpoint_unreadable, once', async ({
    assert,
  }) => {
    const inner = uiMessageStreamAgent({
      stream: () => new ReadableStream({ start: (c) => c.close() }),
    })
    let resumes = 0
    const runner: AgentRunner = {
      async start(ctx) {
        await ctx.writer.write({
          t: 'approval',
          runId: ctx.runId,
          id: 'call_1',
          toolName: 'pay',
          input: {},
        })
        return {
          status: 'parked',
          checkpoint: { runner: 'ui-message-stream', version: 1, approvals: {} },
        }
      },
      resume: (ctx) => (resumes++, inner.resume(ctx)),
    }
    const { driver, sink, parking } = await setupRunner(runner)
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Go', principal: alice })
    ).done
    await parking.decisions.approve(id, 'call_1', decider)
    await driver.settled()
    assert.equal(resumes, 1)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.deepInclude(frames.at(-1), {
      t: 'error',
      code: 'checkpoint_unreadable',
      message: "The run's checkpoint could not be read: the agent changed since the run paused.",
    })
  })
})

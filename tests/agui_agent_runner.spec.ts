import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { AbstractAgent, HttpAgent } from '@ag-ui/client'
import { EventType, type BaseEvent, type RunAgentInput } from '@ag-ui/core'
import { Observable } from 'rxjs'
import { aguiAgent } from '../src/runners/agui_agent/index.js'
import { FAILURE_SENTENCES } from '../src/core/frames.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { EmailAgent } from '../demo/agents/agui_agent.js'
import { setupRunner } from './helpers/parking.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { collect, runId, textOf } from './helpers/sink.js'

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }
const said = (text: string) => ({
  id: `u-${randomUUID()}`,
  parts: [{ type: 'text' as const, text }],
})
const kinds = (frames: any[]) =>
  frames.map((f) => (f.t === 'event' ? f.event.kind : f.t)).filter((k) => k !== 'text')

/** An AG-UI agent that plays `script(input)` and keeps every input it was run with. */
class ScriptedAgent extends AbstractAgent {
  inputs: RunAgentInput[] = []
  constructor(readonly script: (input: RunAgentInput) => Record<string, unknown>[]) {
    super()
  }
  run(input: RunAgentInput) {
    this.inputs.push(input)
    return new Observable<BaseEvent>((subscriber) => {
      const { threadId, runId: id } = input
      subscriber.next({ type: EventType.RUN_STARTED, threadId, runId: id } as BaseEvent)
      for (const event of this.script(input)) subscriber.next(event as BaseEvent)
      subscriber.complete()
    })
  }
  clone() {
    const copy = super.clone() as ScriptedAgent
    ;(copy as any).script = this.script
    copy.inputs = this.inputs
    return copy
  }
}

/** The demo's email agent, keeping every input it was run with (its clones too). */
class RecordingEmailAgent extends EmailAgent {
  inputs: RunAgentInput[] = []
  run(input: RunAgentInput) {
    this.inputs.push(input)
    return super.run(input)
  }
  clone() {
    const copy = super.clone() as RecordingEmailAgent
    copy.inputs = this.inputs
    return copy
  }
}

const finished = (input: RunAgentInput, outcome?: unknown) => ({
  type: EventType.RUN_FINISHED,
  threadId: input.threadId,
  runId: input.runId,
  ...(outcome ? { outcome } : {}),
})

test.group('AG-UI agent runner', () => {
  test('a tool_call interrupt parks an approval; approved, the agent is run again with resume[] and the same messages', async ({
    assert,
  }) => {
    const sent: unknown[] = []
    const agent = new RecordingEmailAgent((input) => sent.push(input))
    const inputs = agent.inputs
    const { driver, sink, parking } = await setupRunner(aguiAgent({ agent: agent as never }))
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
      'tool-input-start',
      'tool-input-delta',
      'tool-input-available',
      'approval',
    ])
    assert.deepInclude(
      parked.find((f) => f.t === 'approval'),
      {
        runId: id,
        id: `call_1_${id}`,
        toolName: 'send_email',
        input: { to: 'team@example.com' },
        approver: 'requester',
        confirmation: { title: 'Send the email?' },
      }
    )
    assert.lengthOf(sent, 0)

    await parking.decisions.approve(id, `call_1_${id}`, decider, {
      input: { to: 'boss@example.com' },
    })
    await driver.settled()
    assert.deepEqual(sent, [{ to: 'boss@example.com' }])
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.deepEqual(
      frames.filter((f) => f.event?.kind === 'tool-output').map((f) => f.event.output),
      [{ sent: true }]
    )
    // The resume: the messages as they were at the park, the decision in resume[].
    assert.lengthOf(inputs, 2)
    assert.deepEqual(inputs[1].resume, [
      {
        interruptId: `int-call_1_${id}`,
        status: 'resolved',
        payload: { approved: true, editedArgs: { to: 'boss@example.com' } },
      },
    ])
    assert.deepEqual(
      inputs[1].messages.map((m) => m.role),
      ['user', 'assistant']
    )
    assert.deepInclude(inputs[1].messages[1], { content: 'I will send it. ' })
    assert.deepEqual((inputs[1].messages[1] as any).toolCalls, [
      {
        id: `call_1_${id}`,
        type: 'function',
        function: { name: 'send_email', arguments: '{"to":"team@example.com"}' },
      },
    ])
    assert.notEqual(inputs[1].runId, inputs[0].runId)
  })

  test('a rejection: resolved with approved false and the reason; the tool never runs', async ({
    assert,
  }) => {
    const sent: unknown[] = []
    const agent = new RecordingEmailAgent((input) => sent.push(input))
    const inputs = agent.inputs
    const { driver, sink, parking } = await setupRunner(aguiAgent({ agent: agent as never }))
    const id = runId()
    await (
      await driver.start({
        runId: id,
        principal: alice,
        userMessage: said('Send the weekly report'),
      })
    ).done
    await parking.decisions.reject(id, `call_1_${id}`, decider, { reason: 'Not this week.' })
    await driver.settled()
    assert.lengthOf(sent, 0)
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'I will send it. Not sent.')
    assert.deepEqual(inputs[1].resume, [
      {
        interruptId: `int-call_1_${id}`,
        status: 'resolved',
        payload: { approved: false, reason: 'Not this week.' },
      },
    ])
    // The denial the decision stored is not also sent as a tool message.
    assert.deepEqual(
      inputs[1].messages.map((m) => m.role),
      ['user', 'assistant']
    )
  })

  test('an input_required interrupt parks a question set from its responseSchema; the answers are its payload', async ({
    assert,
  }) => {
    const agent = new ScriptedAgent((input) => {
      const entry = input.resume?.[0]
      if (entry) {
        return [
          { type: EventType.TEXT_MESSAGE_START, messageId: 'm2', role: 'assistant' },
          {
            type: EventType.TEXT_MESSAGE_CONTENT,
            messageId: 'm2',
            delta: `Format: ${(entry.payload as any).format}`,
          },
          { type: EventType.TEXT_MESSAGE_END, messageId: 'm2' },
          finished(input),
        ]
      }
      return [
        finished(input, {
          type: 'interrupt',
          interrupts: [
            {
              id: 'int-format',
              reason: 'input_required',
              message: 'One question.',
              responseSchema: {
                type: 'object',
                properties: {
                  format: { type: 'string', enum: ['pdf', 'csv'], title: 'Which format?' },
                  urgent: { type: 'boolean', title: 'Urgent?' },
                },
              },
            },
          ],
        }),
      ]
    })
    const { driver, sink, parking } = await setupRunner(aguiAgent({ agent }))
    const id = runId()
    const first = await (
      await driver.start({ runId: id, input: 'Make the report', principal: alice })
    ).done
    assert.equal(first.status, 'parked')
    const asked: any = (await collect(sink.subscribe(id))).find((f) => f.t === 'elicitation')
    assert.equal(asked.id, 'int-format')
    assert.equal(asked.request.preamble, 'One question.')
    assert.deepEqual(
      asked.request.questions.map((q: any) => [q.id, q.prompt, q.options.map((o: any) => o.value)]),
      [
        ['format', 'Which format?', ['pdf', 'csv']],
        ['urgent', 'Urgent?', ['true', 'false']],
      ]
    )
    // The run's input was the person's message.
    assert.deepInclude(agent.inputs[0].messages[0], { role: 'user', content: 'Make the report' })
    await parking.decisions.answer(id, 'int-format', decider, {
      answers: { format: ['csv'], urgent: ['false'] },
    })
    await driver.settled()
    assert.deepEqual(agent.inputs[1].resume, [
      { interruptId: 'int-format', status: 'resolved', payload: { format: 'csv', urgent: false } },
    ])
    assert.equal(textOf(await collect(sink.subscribe(id))), 'Format: csv')
  })

  test('RUN_ERROR fails the run with the fixed sentence; its message goes to onError only', async ({
    assert,
  }) => {
    const agent = new ScriptedAgent(() => [
      { type: EventType.TEXT_MESSAGE_START, messageId: 'm1', role: 'assistant' },
      { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: 'Starting. ' },
      { type: EventType.TEXT_MESSAGE_END, messageId: 'm1' },
      { type: EventType.RUN_ERROR, message: 'secret: sk-live-123', code: 'boom' },
    ])
    const errors: unknown[] = []
    const { driver, sink } = await setupRunner(
      aguiAgent({ agent, onError: (error) => errors.push(error) })
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
    assert.deepEqual(errors, [{ message: 'secret: sk-live-123', code: 'boom' }])
  })

  test('CUSTOM and STATE_* are stored as custom and state frames, unknown events are skipped, the state carries to the next segment', async ({
    assert,
  }) => {
    const agent = new ScriptedAgent((input) =>
      input.resume
        ? [finished(input)]
        : [
            { type: EventType.CUSTOM, name: 'progress', value: { done: 1 } },
            { type: 'SOMETHING_NEW', payload: 1 },
            { type: EventType.STATE_SNAPSHOT, snapshot: { step: 1 } },
            { type: EventType.STATE_DELTA, delta: [{ op: 'replace', path: '/step', value: 2 }] },
            { type: EventType.RAW, event: { anything: true } },
            finished(input, {
              type: 'interrupt',
              interrupts: [{ id: 'int-1', reason: 'confirmation', message: 'Go on?' }],
            }),
          ]
    )
    const warn = console.warn
    console.warn = () => {}
    try {
      const { driver, sink, parking } = await setupRunner(aguiAgent({ agent }))
      const id = runId()
      await (
        await driver.start({ runId: id, input: 'Go', principal: alice })
      ).done
      const frames: any[] = await collect(sink.subscribe(id))
      assert.deepEqual(kinds(frames), ['custom', 'state', 'state', 'elicitation'])
      assert.deepInclude(frames[0].event, { name: 'progress', value: { done: 1 } })
      assert.deepEqual(frames[1].event.snapshot, { step: 1 })
      assert.deepEqual(frames[2].event.delta, [{ op: 'replace', path: '/step', value: 2 }])
      const asked = frames[3]
      assert.deepEqual(asked.request.questions[0].id, 'answer')
      await parking.decisions.answer(id, 'int-1', decider, { answers: { answer: ['yes'] } })
      await driver.settled()
      assert.deepEqual(agent.inputs[1].state, { step: 2 })
      assert.deepEqual(agent.inputs[1].resume, [
        { interruptId: 'int-1', status: 'resolved', payload: 'yes' },
      ])
    } finally {
      console.warn = warn
    }
  })

  test('a checkpoint it cannot read fails the resume with checkpoint_unreadable, once', async ({
    assert,
  }) => {
    const inner = aguiAgent({ agent: new ScriptedAgent((input) => [finished(input)]) })
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
        return { status: 'parked', checkpoint: { runner: 'agui-agent', version: 0 } }
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

test.group('AG-UI agent runner | the thread after a turn that failed mid-tool', () => {
  test('the next turn is not sent the call the failed turn left without a result', async ({
    assert,
    cleanup,
  }) => {
    const agent = new ScriptedAgent((input) =>
      input.messages.length === 1
        ? [
            { type: EventType.TOOL_CALL_START, toolCallId: 'call_open', toolCallName: 'pay' },
            { type: EventType.TOOL_CALL_ARGS, toolCallId: 'call_open', delta: '{}' },
            { type: EventType.TOOL_CALL_END, toolCallId: 'call_open' },
            { type: EventType.RUN_ERROR, message: 'the tool crashed' },
          ]
        : [finished(input)]
    )
    const { url, close } = await serveRuntime(
      { runner: aguiAgent({ agent }) },
      (served, principal) => createAgUiFetchHandler(served.door, { basePath: '/agui', principal })
    )
    cleanup(close)
    const client = new HttpAgent({
      url: `${url}/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'x-user': 'alice' },
      initialMessages: [{ id: 'u1', role: 'user', content: 'Pay it' }],
    })
    await client.runAgent().catch(() => {}) // the turn ends RUN_ERROR
    client.addMessage({ id: 'u2', role: 'user', content: 'Try again later' })
    await client.runAgent()
    const second = agent.inputs.at(-1)!
    assert.deepEqual(
      second.messages.map((m) => m.role),
      ['user', 'user'],
      'the open call of the failed turn is left out'
    )
    assert.notInclude(JSON.stringify(second.messages), 'call_open')
  }).timeout(30_000)
})

/**
 * `uiMessageStreamAgent` on the real producers docs/runners/ui_message_stream.md names (no
 * network): a Mastra `Agent` through `@mastra/ai-sdk` (`toAISdkStream`, `handleChatStream`) and
 * an OpenAI Agents SDK `Agent` through `@openai/agents-extensions/ai-sdk-ui`
 * (`createAiSdkUiMessageStream`), each on its framework's scripted model playing the email
 * scenario (demo/agents/scenario.ts). The stored frames and the tool's runs are asserted.
 */
import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { Database } from '@adonisjs/lucid/database'
import type { UIMessageChunk } from 'ai'
import { Mastra } from '@mastra/core'
import { Agent as MastraAgent, type AgentConfig } from '@mastra/core/agent'
import { createTool } from '@mastra/core/tools'
import { handleChatStream, toAISdkStream } from '@mastra/ai-sdk'
import { Agent, RunState, run, tool } from '@openai/agents'
import { createAiSdkUiMessageStream } from '@openai/agents-extensions/ai-sdk-ui'
import { z } from 'zod'
import {
  uiMessageStreamAgent,
  type UiMessageStreamArgs,
} from '../src/runners/ui_message_stream/index.js'
import { lucidMastraStore } from '../src/runners/mastra/index.js'
import { emailModelV4 } from '../demo/agents/ai_sdk_model.js'
import { EmailModel } from '../demo/agents/openai_agents.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf } from './helpers/sink.js'

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }
const said = (text: string) => ({
  id: `u-${randomUUID()}`,
  parts: [{ type: 'text' as const, text }],
})
const kinds = (frames: any[]) =>
  frames
    .map((f) => (f.t === 'event' ? f.event.kind : f.t))
    .filter((k) => !['text', 'user-message', 'step-start', 'step-finish'].includes(k))
const outputs = (frames: any[]) =>
  frames.filter((f) => f.event?.kind === 'tool-output').map((f) => [f.event.id, f.event.output])

/** Mastra's `Agent` on the scenario's V4 test model, its snapshots in the test's database. */
function mastraMailer(db: () => Database, requireApproval: boolean) {
  const ran: unknown[] = []
  const sendEmail = createTool({
    id: 'send_email',
    description: 'Send an email',
    inputSchema: z.object({ to: z.string() }),
    requireApproval,
    execute: async (input) => {
      ran.push(input)
      return { sent: true }
    },
  })
  const make = () =>
    new Mastra({
      agents: {
        mailer: new MastraAgent({
          id: 'mailer',
          name: 'Mailer',
          instructions: 'You send the weekly report when asked.',
          model: emailModelV4() as unknown as AgentConfig['model'],
          tools: { send_email: sendEmail },
        }),
      },
      storage: lucidMastraStore({ db: db() }),
      logger: false,
    })
  let mastra: ReturnType<typeof make> | undefined
  return { ran, mastra: () => (mastra ??= make()) }
}

/** A run of the email scenario's first message, read to its end. */
async function firstTurn(stack: Awaited<ReturnType<typeof setupRunner>>) {
  const id = runId()
  const outcome = await (
    await stack.driver.start({
      runId: id,
      principal: alice,
      userMessage: said('Send the weekly report'),
    })
  ).done
  return { id, outcome, frames: (await collect(stack.sink.subscribe(id))) as any[] }
}

test.group('UI message stream producers: Mastra (@mastra/ai-sdk)', () => {
  test('toAISdkStream({ from: "agent" }): the text, the tool call and its result become frames; the tool runs once', async ({
    assert,
  }) => {
    let db!: Database
    const { ran, mastra } = mastraMailer(() => db, false)
    const stack = await setupRunner(
      uiMessageStreamAgent({
        stream: async ({ messages }) =>
          toAISdkStream(
            await mastra()
              .getAgent('mailer')
              .stream(messages as never),
            {
              from: 'agent',
            }
          ) as unknown as ReadableStream<UIMessageChunk>,
      })
    )
    db = stack.db
    const { outcome, frames } = await firstTurn(stack)
    assert.equal(outcome.status, 'finished')
    assert.equal(textOf(frames), 'I will send it. Sent.')
    assert.deepEqual(kinds(frames), [
      'tool-input-start',
      'tool-input-delta',
      'tool-input-available',
      'tool-output',
    ])
    assert.deepInclude(frames.find((f) => f.event?.kind === 'tool-input-available').event, {
      id: 'call_1',
      name: 'send_email',
      input: { to: 'team@example.com' },
    })
    assert.deepEqual(outputs(frames), [['call_1', { sent: true }]])
    assert.deepEqual(ran, [{ to: 'team@example.com' }])
  }).timeout(30_000)

  test('toAISdkStream({ from: "agent" }) (v5, the default): requireApproval is a data-tool-call-approval part, not a tool-approval-request: stored as a component, nothing parks', async ({
    assert,
  }) => {
    let db!: Database
    const { ran, mastra } = mastraMailer(() => db, true)
    const stack = await setupRunner(
      uiMessageStreamAgent({
        stream: async ({ messages }) =>
          toAISdkStream(
            await mastra()
              .getAgent('mailer')
              .stream(messages as never),
            {
              from: 'agent',
            }
          ) as unknown as ReadableStream<UIMessageChunk>,
      })
    )
    db = stack.db
    const { outcome, frames } = await firstTurn(stack)
    assert.equal(outcome.status, 'finished')
    assert.notInclude(kinds(frames), 'approval')
    const component = frames.find((f) => f.t === 'component')
    assert.equal(component.name, 'tool-call-approval')
    assert.equal(component.id, 'call_1')
    assert.deepInclude(component.data, { toolName: 'send_email', toolCallId: 'call_1' })
    assert.lengthOf(ran, 0)
  }).timeout(30_000)

  /** Mastra's own chat route (`toAISdkStream` v7 in, `resumeStream` on approval-responded). */
  function chatRoute(mastra: () => Mastra) {
    return uiMessageStreamAgent({
      // Mastra types its streams against its own copy of the AI SDK's types.
      stream: async ({ messages }: UiMessageStreamArgs) =>
        (await handleChatStream({
          mastra: mastra(),
          agentId: 'mailer',
          params: { messages: messages as never },
          version: 'v7',
        })) as unknown as ReadableStream<UIMessageChunk>,
    })
  }

  test('handleChatStream (version v7): the tool-approval-request parks; approved, Mastra resumes its run and the tool runs once', async ({
    assert,
  }) => {
    let db!: Database
    const { ran, mastra } = mastraMailer(() => db, true)
    const stack = await setupRunner(chatRoute(mastra))
    db = stack.db
    const { id, outcome, frames } = await firstTurn(stack)
    assert.equal(outcome.status, 'parked')
    assert.deepEqual(kinds(frames), [
      'tool-input-start',
      'tool-input-delta',
      'tool-input-available',
      'approval',
      'component',
    ])
    assert.deepInclude(
      frames.find((f) => f.t === 'approval'),
      { id: 'call_1', toolName: 'send_email', input: { to: 'team@example.com' } }
    )
    assert.lengthOf(ran, 0)

    await stack.parking.decisions.approve(id, 'call_1', decider)
    await stack.driver.settled()
    assert.deepEqual(ran, [{ to: 'team@example.com' }])
    const after: any[] = await collect(stack.sink.subscribe(id))
    assert.equal(textOf(after), 'I will send it. Sent.')
    assert.deepEqual(outputs(after), [['call_1', { sent: true }]])
    assert.lengthOf(
      after.filter((f) => f.event?.kind === 'tool-input-available'),
      1
    )
  }).timeout(30_000)

  test('handleChatStream (version v7): rejected, Mastra declines the call; the tool never runs', async ({
    assert,
  }) => {
    let db!: Database
    const { ran, mastra } = mastraMailer(() => db, true)
    const stack = await setupRunner(chatRoute(mastra))
    db = stack.db
    const { id, outcome } = await firstTurn(stack)
    assert.equal(outcome.status, 'parked')
    await stack.parking.decisions.reject(id, 'call_1', decider, { reason: 'Not this week.' })
    await stack.driver.settled()
    const after: any[] = await collect(stack.sink.subscribe(id))
    assert.lengthOf(ran, 0)
    assert.equal(textOf(after), 'I will send it. Not sent.')
    assert.lengthOf(outputs(after), 0)
    assert.lengthOf(
      after.filter((f) => f.event?.kind === 'tool-output-denied'),
      1
    )
  }).timeout(30_000)

  test("handleChatStream (version v7): an edited input is not applied (Mastra resumes with approved only): the tool runs with the model's input", async ({
    assert,
  }) => {
    let db!: Database
    const { ran, mastra } = mastraMailer(() => db, true)
    const stack = await setupRunner(chatRoute(mastra))
    db = stack.db
    const { id } = await firstTurn(stack)
    await stack.parking.decisions.approve(id, 'call_1', decider, {
      input: { to: 'boss@example.com' },
    })
    await stack.driver.settled()
    assert.deepEqual(ran, [{ to: 'team@example.com' }])
  }).timeout(30_000)
})

/** The OpenAI Agents SDK's `Agent` on the scenario's scripted model (demo/agents/openai_agents.ts). */
function openAiMailer(needsApproval: boolean) {
  const ran: unknown[] = []
  const sendEmail = tool({
    name: 'send_email',
    description: 'Send the weekly report by email',
    parameters: z.object({ to: z.string() }),
    needsApproval,
    execute: async (input) => {
      ran.push(input)
      return { sent: true }
    },
  })
  // A new agent per call: nothing of a run is kept in the objects.
  const agent = () =>
    new Agent({
      name: 'mailer',
      instructions: 'You prepare and send the weekly report.',
      model: new EmailModel(),
      tools: [sendEmail],
    })
  return { ran, agent }
}

const STATES = 'usp_openai_run_states'

/**
 * The producer docs/runners/ui_message_stream.md shows for the OpenAI Agents SDK: the UI message
 * stream of `run(agent, ..., { stream: true })`; a run that stops on approvals keeps its
 * `RunState` (the app's table, by the runner's run id); a resume reads it back, approves or
 * rejects each `approval-responded` call, and runs again.
 */
function openAiProducer(db: () => Database, agent: () => Agent<any, any>) {
  return uiMessageStreamAgent({
    async *stream({ messages, runId: id, resumed }) {
      const mailer = agent()
      let input: string | RunState<any, any>
      if (resumed) {
        const row = await db().from(STATES).where('run_id', id).firstOrFail()
        const state = await RunState.fromString(mailer, row.state)
        const parts = messages.at(-1)!.parts as any[]
        for (const item of state.getInterruptions()) {
          const part = parts.find(
            (p) =>
              p.state === 'approval-responded' &&
              p.toolCallId === (item.rawItem as { callId?: string }).callId
          )
          if (!part) continue
          if (part.approval.approved) state.approve(item)
          else state.reject(item, { message: part.approval.reason })
        }
        input = state
      } else {
        input = messages
          .at(-1)!
          .parts.map((p) => (p.type === 'text' ? p.text : ''))
          .join('')
      }
      const result = await run(mailer, input as string, { stream: true })
      yield* createAiSdkUiMessageStream(result)
      await result.completed
      await db().from(STATES).where('run_id', id).delete()
      if (result.interruptions.length > 0) {
        await db().table(STATES).insert({ run_id: id, state: result.state.toString() })
      }
    },
  })
}

async function openAiStack(needsApproval: boolean) {
  const { ran, agent } = openAiMailer(needsApproval)
  let db!: Database
  const stack = await setupRunner(openAiProducer(() => db, agent))
  db = stack.db
  await db.connection().schema.dropTableIfExists(STATES)
  await db.connection().schema.createTable(STATES, (table) => {
    table.string('run_id', 191).primary()
    table.text('state', 'longtext').notNullable()
  })
  return { ran, stack }
}

test.group(
  'UI message stream producers: OpenAI Agents (@openai/agents-extensions/ai-sdk-ui)',
  () => {
    test('createAiSdkUiMessageStream: the text, the tool call and its result become frames; the tool runs once', async ({
      assert,
    }) => {
      const { ran, stack } = await openAiStack(false)
      const { outcome, frames } = await firstTurn(stack)
      assert.equal(outcome.status, 'finished')
      assert.equal(textOf(frames), 'I will send it. Sent.')
      assert.deepEqual(kinds(frames), ['tool-input-start', 'tool-input-available', 'tool-output'])
      assert.deepInclude(frames.find((f) => f.event?.kind === 'tool-input-available').event, {
        id: 'call_1',
        name: 'send_email',
        input: { to: 'team@example.com' },
      })
      assert.deepEqual(outputs(frames), [['call_1', { sent: true }]])
      assert.deepEqual(ran, [{ to: 'team@example.com' }])
    }).timeout(30_000)

    test('needsApproval: the tool-approval-request parks; approved, the RunState the producer kept resumes and the tool runs once', async ({
      assert,
    }) => {
      const { ran, stack } = await openAiStack(true)
      const { id, outcome, frames } = await firstTurn(stack)
      assert.equal(outcome.status, 'parked')
      assert.deepEqual(kinds(frames), ['tool-input-start', 'tool-input-available', 'approval'])
      assert.deepInclude(
        frames.find((f) => f.t === 'approval'),
        { id: 'call_1', toolName: 'send_email', input: { to: 'team@example.com' } }
      )
      assert.lengthOf(ran, 0)

      await stack.parking.decisions.approve(id, 'call_1', decider)
      await stack.driver.settled()
      assert.deepEqual(ran, [{ to: 'team@example.com' }])
      const after: any[] = await collect(stack.sink.subscribe(id))
      assert.equal(textOf(after), 'I will send it. Sent.')
      assert.deepEqual(outputs(after), [['call_1', { sent: true }]])
      assert.lengthOf(await stack.db.from(STATES).where('run_id', id), 0)
    }).timeout(30_000)

    test('needsApproval: rejected, the SDK hands the model the reason; the tool never runs; one denial', async ({
      assert,
    }) => {
      const { ran, stack } = await openAiStack(true)
      const { id } = await firstTurn(stack)
      await stack.parking.decisions.reject(id, 'call_1', decider, { reason: 'Not this week.' })
      await stack.driver.settled()
      const after: any[] = await collect(stack.sink.subscribe(id))
      assert.lengthOf(ran, 0)
      assert.equal(textOf(after), 'I will send it. Not sent.')
      assert.lengthOf(outputs(after), 0)
      assert.lengthOf(
        after.filter((f) => f.event?.kind === 'tool-output-denied'),
        1
      )
    }).timeout(30_000)

    test("needsApproval: an edited input is not applied (state.approve takes none): the tool runs with the model's input", async ({
      assert,
    }) => {
      const { ran, stack } = await openAiStack(true)
      const { id } = await firstTurn(stack)
      await stack.parking.decisions.approve(id, 'call_1', decider, {
        input: { to: 'boss@example.com' },
      })
      await stack.driver.settled()
      assert.deepEqual(ran, [{ to: 'team@example.com' }])
    }).timeout(30_000)
  }
)

import { test } from '@japa/runner'
import { Agent, run, setTracingDisabled, shellTool, tool } from '@openai/agents'
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents/testing'
import { z } from 'zod'
import { openAiAgent } from '../src/runners/openai_agents/index.js'
import { UNAPPLIED_EDIT_SENTENCE, restoredState } from '../src/runners/openai_agents/checkpoint.js'
import { InvalidDecisionError } from '../src/errors.js'
import { setupRunner } from './helpers/parking.js'
import { collect, runId, textOf } from './helpers/sink.js'
import { tablesSnapshot } from './helpers/decisions.js'

setTracingDisabled(true)

const alice = { id: 'alice' }
const decider = { principal: alice, via: 'api' }

const events = (frames: any[], kind: string) =>
  frames.filter((f) => f.t === 'event' && f.event.kind === kind).map((f) => f.event)

/** An agent whose model asks the SDK's own shell tool (needs approval) to run `ls`, then says "Done." */
function sheller(action: Record<string, unknown> = { commands: ['ls'] }) {
  const ran: string[][] = []
  const shell = shellTool({
    needsApproval: true,
    shell: {
      run: async (asked) => {
        ran.push(asked.commands)
        return { output: [{ stdout: 'a.txt', stderr: '', outcome: { type: 'exit', exitCode: 0 } }] }
      },
    },
  })
  const model = new ScriptedModel([
    [
      assistantMessage('Listing. '),
      {
        type: 'shell_call',
        callId: 'sh_1',
        status: 'completed',
        action,
      } as any,
    ],
    [assistantMessage('Done.')],
  ])
  return { ran, agent: new Agent({ name: 'sheller', model, tools: [shell] }) }
}

test.group('OpenAI Agents runner: approved calls and edits', () => {
  test('an approved shell call nobody edited runs once, as the model asked', async ({ assert }) => {
    const shell = sheller()
    const { driver, sink, parking } = await setupRunner(openAiAgent({ agent: shell.agent }))
    const id = runId()
    const first = await (
      await driver.start({ runId: id, input: 'List files', principal: alice })
    ).done
    assert.equal(first.status, 'parked')
    const parked: any[] = await collect(sink.subscribe(id), { limit: 6, timeoutMs: 5_000 })
    const approval = parked.find((f) => f.t === 'approval')
    assert.deepInclude(approval, { id: 'sh_1', input: { commands: ['ls'] }, inputSchema: false })

    await parking.decisions.approve(id, 'sh_1', decider)
    await driver.settled()
    assert.deepEqual(shell.ran, [['ls']])
    const frames: any[] = await collect(sink.subscribe(id))
    assert.equal(textOf(frames), 'Listing. Done.')
    assert.notInclude(JSON.stringify(frames), UNAPPLIED_EDIT_SENTENCE)
    assert.lengthOf(events(frames, 'tool-output-denied'), 0)
  }).timeout(30_000)

  test('an edit of a shell call is refused up front (422), nothing changes; approved, it runs once', async ({
    assert,
  }) => {
    const shell = sheller()
    const { db, driver, parking } = await setupRunner(openAiAgent({ agent: shell.agent }))
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'List files', principal: alice })
    ).done
    const before = await tablesSnapshot(db)
    const error = await parking.decisions
      .approve(id, 'sh_1', decider, { input: { commands: ['rm -rf /'] } })
      .catch((caught: unknown) => caught)
    assert.instanceOf(error, InvalidDecisionError)
    assert.equal((error as InvalidDecisionError).status, 422)
    assert.equal(await tablesSnapshot(db), before)
    await parking.decisions.approve(id, 'sh_1', decider)
    await driver.settled()
    assert.deepEqual(shell.ran, [['ls']])
  }).timeout(30_000)

  test('an edited function call runs with its edit; the same input in another key order is no edit', async ({
    assert,
  }) => {
    const ran: unknown[] = []
    const sendEmail = tool({
      name: 'send_email',
      description: 'Send an email',
      parameters: z.object({ to: z.string(), cc: z.string() }),
      needsApproval: true,
      execute: async (input) => {
        ran.push(input)
        return { sent: true }
      },
    })
    const agent = () =>
      new Agent({
        name: 'mailer',
        model: new ScriptedModel([
          [functionCall('send_email', { to: 'team@example.com', cc: 'me' }, { callId: 'c1' })],
          [assistantMessage('Sent.')],
        ]),
        tools: [sendEmail],
      })
    for (const [input, expected] of [
      [
        { to: 'boss@example.com', cc: 'me' },
        { to: 'boss@example.com', cc: 'me' },
      ],
      [
        { cc: 'me', to: 'team@example.com' },
        { to: 'team@example.com', cc: 'me' },
      ],
    ] as const) {
      ran.length = 0
      const { driver, sink, parking } = await setupRunner(openAiAgent({ agent: agent() }))
      const id = runId()
      await (
        await driver.start({ runId: id, input: 'Send it', principal: alice })
      ).done
      await parking.decisions.approve(id, 'c1', decider, { input })
      await driver.settled()
      assert.deepEqual(ran, [expected])
      const frames: any[] = await collect(sink.subscribe(id))
      assert.equal(textOf(frames), 'Sent.')
    }
  }).timeout(30_000)

  test('restoredState: an approval whose input is the asked one (any key order) is approved, not rewritten', async ({
    assert,
  }) => {
    const shell = sheller({ commands: ['ls'], timeoutMs: 5_000 })
    const first = await run(shell.agent, 'List files')
    const checkpoint = {
      runner: 'openai-agents' as const,
      state: first.state.toString(),
      scopes: [],
      handoffs: 0,
    }
    const item = { kind: 'approval', id: 'sh_1', runId: 'r', park: 1, status: 'approved' } as const
    const asked = { ...item, decidedBy: null, decidedVia: null, reason: null }
    const { state } = await restoredState(shell.agent, checkpoint, [
      { ...asked, input: { timeoutMs: 5_000, commands: ['ls'] } },
    ])
    const second = await run(shell.agent, state)
    assert.deepEqual(shell.ran, [['ls']])
    assert.equal(second.finalOutput, 'Done.')
  }).timeout(30_000)
})

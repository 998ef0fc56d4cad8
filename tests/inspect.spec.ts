import { test } from '@japa/runner'
import { FsLoader } from '@adonisjs/core/ace'
import type { ApplicationService } from '@adonisjs/core/types'
import AgentStreamInspect, { summarizeRow } from '../commands/inspect.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { setupApp } from './helpers/app.js'
import { resetTables } from './helpers/db.js'
import { runId } from './helpers/sink.js'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** The app with the scripted agent (one approval step) as its runner, on fresh tables. */
async function setup() {
  const app = await setupApp({ runner: scriptedAgent({ steps: ['approval'] }) })
  await resetTables(await app.container.make('lucid.db'))
  return { app, agentStream: await app.container.make('agentStream') }
}

async function inspect(app: ApplicationService, argv: string[]) {
  const ace = await app.container.make('ace')
  ace.ui.switchMode('raw')
  const command = await ace.create(AgentStreamInspect, argv)
  await command.exec()
  return { command, logs: command.ui.logger.getLogs().map((log) => log.message) }
}

test.group('agent-stream:inspect', () => {
  test('a parked run: the head, its frames and the pending approval, as tables', async ({
    assert,
  }) => {
    const { app, agentStream } = await setup()
    const id = runId('inspect')
    const { done } = await agentStream.driver.start({ runId: id, principal: { id: 'u1' } })
    assert.equal((await done).status, 'parked')

    const { command, logs } = await inspect(app, [id])
    command.assertSucceeded()
    assert.include(logs, `bold(Stream ${id})`)
    assert.includeMembers(logs, [
      'Field|Value',
      'status|ended',
      'last seq|4',
      'lease|-',
      'bold(Frames (4))',
      'Seq|Kind|Summary',
      '1|event|step-start',
      `2|event|tool-input-available ${id}.call0 send_email (action)`,
      `3|approval|send_email ${id}.call0 (approver: requester)`,
      '4|end|end of segment',
      'bold(Parked items (1))',
      'Kind|Parked run|Item|Status|Approver|Decided by / via|Expires',
      `approval send_email|${id}|${id}.call0|pending|requester|-|-`,
    ])
    for (const field of ['created', 'updated', 'ended']) {
      const line = logs.find((log) => log.startsWith(`${field}|`))
      assert.match(line!.split('|')[1], ISO, field)
    }
  })

  test('--json after the decision: one object with the decided item and the settlement', async ({
    assert,
  }) => {
    const { app, agentStream } = await setup()
    const id = runId('inspect')
    await (
      await agentStream.driver.start({ runId: id, principal: { id: 'u1' } })
    ).done
    await agentStream.parking.decisions.approve(id, `${id}.call0`, {
      principal: { id: 'u1' },
      via: 'admin',
    })
    await agentStream.driver.settled()

    const { command, logs } = await inspect(app, [id, '--json'])
    command.assertSucceeded()
    assert.lengthOf(logs, 1)
    const report = JSON.parse(logs[0])
    assert.equal(report.stream.runId, id)
    assert.equal(report.stream.status, 'ended')
    assert.equal(report.stream.lastSeq, report.frames.at(-1).seq)
    assert.match(report.stream.createdAt, ISO)
    assert.match(report.stream.endedAt, ISO)
    assert.isNull(report.stream.leaseExpiresAt)
    assert.deepEqual(
      report.frames.map((frame: { seq: number }) => frame.seq),
      report.frames.map((_: unknown, index: number) => index + 1)
    )
    const summaries = report.frames.map((frame: { summary: string }) => frame.summary)
    assert.include(summaries, `approval-settled ${id}.call0 approved by u1 via admin`)
    assert.include(summaries, '"All done."')
    assert.containsSubset(report.parked, [
      {
        kind: 'approval',
        runId: id,
        itemId: `${id}.call0`,
        status: 'approved',
        approver: 'requester',
        toolName: 'send_email',
        decidedBy: 'u1',
        decidedVia: 'admin',
        expiresAt: null,
      },
    ])
    assert.lengthOf(report.parked, 1)
  })

  test('an open stream shows its lease; long text is cut to one line of 80 characters', async ({
    assert,
  }) => {
    const { app, agentStream } = await setup()
    const id = runId('inspect')
    const writer = await agentStream.sink.open(id)
    await writer.write({ t: 'text', v: `first line\nsecond line ${'x'.repeat(200)}` })
    await writer.write({ t: 'component', name: 'chart', data: {}, id: 'call1:ui:1', version: 2 })
    await writer.write({ t: 'error', code: 'run_failed', message: 'The run stopped unexpectedly.' })
    await writer.flush()

    const { logs } = await inspect(app, [id])
    assert.include(logs, 'status|open')
    assert.match(
      logs.find((log) => log.startsWith('lease|'))!,
      /^lease\|held until \S+Z$/
    )
    const text = logs.find((log) => log.startsWith('1|text|'))!
    const summary = text.slice('1|text|'.length)
    assert.lengthOf(summary, 80)
    assert.isTrue(summary.startsWith('"first line\\nsecond line xxx'), summary)
    assert.isTrue(summary.endsWith('…'))
    assert.include(logs, '2|component|chart call1:ui:1 v2')
    assert.include(logs, '3|error|run_failed: The run stopped unexpectedly.')
    assert.include(logs, 'bold(Parked items (0))')
    await writer.end()

    assert.equal(
      summarizeRow({
        seq: 1,
        kind: 'component',
        body: JSON.stringify({ t: 'component', name: 'chart', data: {}, id: 'c1' }),
        componentId: 'c1',
        superseded: true,
      }),
      'chart c1 [superseded]'
    )
  })

  test('an unknown run id logs an error and exits with code 1', async ({ assert }) => {
    const { app } = await setup()
    for (const argv of [['no-such-run'], ['no-such-run', '--json']]) {
      const { command, logs } = await inspect(app, argv)
      command.assertFailed()
      assert.equal(command.exitCode, 1)
      assert.deepEqual(logs, ['[ red(error) ] Unknown stream "no-such-run"'])
    }
  })

  test('without a run id: the recent runs, newest first, by status and up to a limit', async ({
    assert,
  }) => {
    const { app, agentStream } = await setup()
    const parked = runId('parked')
    const done = runId('done')
    await (
      await agentStream.driver.start({ runId: done, principal: { id: 'u1' } })
    ).done
    await agentStream.parking.decisions.approve(done, `${done}.call0`, {
      principal: { id: 'u1' },
      via: 'api',
    })
    await agentStream.driver.settled()
    await (
      await agentStream.driver.start({ runId: parked, principal: { id: 'u1' } })
    ).done

    const { command, logs } = await inspect(app, [])
    command.assertSucceeded()
    assert.include(logs, 'bold(Runs (2))')
    assert.include(logs, 'Run|Status|Thread|Last seq|Created|Ended')
    const rows = logs.filter((log) => log.startsWith(parked) || log.startsWith(done))
    assert.lengthOf(rows, 2)
    // Newest first.
    assert.match(rows[0], new RegExp(`^${parked}\\|parked\\|${parked}\\|4\\|\\S+Z\\|\\S+Z$`))
    assert.match(rows[1], new RegExp(`^${done}\\|finished\\|`))

    const byStatus = await inspect(app, ['--status', 'finished'])
    assert.include(byStatus.logs, 'bold(Runs (1))')
    assert.isTrue(byStatus.logs.some((log) => log.startsWith(`${done}|finished|`)))
    const limited = await inspect(app, ['--limit', '1', '--json'])
    limited.command.assertSucceeded()
    const report = JSON.parse(limited.logs[0])
    assert.lengthOf(report.runs, 1)
    assert.containsSubset(report.runs[0], { runId: parked, status: 'parked', threadId: parked })
    assert.match(report.runs[0].createdAt, ISO)
  })

  test("--thread and --chat: a thread's runs and a useChat chat's runs", async ({ assert }) => {
    const { app, agentStream } = await setup()
    const first = runId('t')
    await (
      await agentStream.driver.start({ runId: first, threadId: 'thread-1' })
    ).done
    const other = runId('other')
    await (
      await agentStream.driver.start({ runId: other, threadId: 'thread-2' })
    ).done
    const reply = await agentStream.uiMessage.chat(
      {
        id: 'chat-1',
        messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
      },
      { id: 'u1' }
    )
    assert.equal(reply.kind, 'stream')
    if (reply.kind === 'stream') for await (const chunk of reply.events) assert.isDefined(chunk)
    await agentStream.driver.settled()

    const thread = await inspect(app, ['--thread', 'thread-1'])
    thread.command.assertSucceeded()
    assert.include(thread.logs, 'bold(Runs of thread thread-1 (1))')
    assert.isTrue(thread.logs.some((log) => log.startsWith(`${first}|`)))
    assert.isFalse(thread.logs.some((log) => log.startsWith(`${other}|`)))

    const chat = await inspect(app, ['--chat', 'chat-1', '--json'])
    chat.command.assertSucceeded()
    const report = JSON.parse(chat.logs[0])
    assert.equal(report.chat, 'chat-1')
    assert.lengthOf(report.runs, 1)
    assert.containsSubset(report.runs[0], { threadId: 'chat-1', status: 'parked' })
    // The run id it shows is the one `inspect <runId>` takes.
    const one = await inspect(app, [report.runs[0].runId])
    one.command.assertSucceeded()
    assert.include(one.logs, 'bold(Parked items (1))')

    const unknown = await inspect(app, ['--chat', 'no-such-chat'])
    unknown.command.assertFailed()
    assert.deepEqual(unknown.logs, ['[ red(error) ] Unknown chat "no-such-chat"'])
  })

  test("what the person said: its text and each file by name and media type, never the file's bytes", async ({
    assert,
  }) => {
    const { app, agentStream } = await setup()
    const png =
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
    const reply = await agentStream.uiMessage.chat(
      {
        id: 'chat-said',
        messages: [
          {
            id: 'm1',
            role: 'user',
            parts: [
              { type: 'text', text: 'Mail <b>Ada</b>' },
              {
                type: 'file',
                mediaType: 'image/png',
                url: `data:image/png;base64,${png}`,
                filename: 'dot.png',
              },
            ],
          },
        ],
      },
      { id: 'u1' }
    )
    if (reply.kind === 'stream') for await (const chunk of reply.events) assert.isDefined(chunk)
    await agentStream.driver.settled()
    const [run] = JSON.parse((await inspect(app, ['--chat', 'chat-said', '--json'])).logs[0]).runs

    const said = 'user-message m1 "Mail <b>Ada</b>" [file "dot.png" image/png]'
    const { command, logs } = await inspect(app, [run.runId])
    command.assertSucceeded()
    assert.include(logs, `1|event|${said}`)
    const json = await inspect(app, [run.runId, '--json'])
    assert.equal(JSON.parse(json.logs[0]).frames[0].summary, said)
    for (const log of [...logs, ...json.logs]) {
      assert.notInclude(log, png)
      assert.notInclude(log, 'data:image')
    }
  })

  test('bad list flags are refused with the rule they break, before any read', async ({
    assert,
  }) => {
    const { app } = await setup()
    for (const [argv, message] of [
      [['--status', 'nope'], 'Invalid flags: "status" fails the "enum" rule'],
      [['--limit', '0'], 'Invalid flags: "limit" fails the "range" rule'],
      [['--limit', '1.5'], 'Invalid flags: "limit" fails the "withoutDecimals" rule'],
      [['--thread', 'a b'], 'Invalid flags: "thread" fails the "regex" rule'],
      [['--thread', 'a', '--chat', 'b'], 'Give --thread or --chat, not both'],
      [
        ['run-1', '--status', 'parked'],
        'Give a run id, or list with --thread, --chat, --status or --limit',
      ],
    ] as const) {
      const { command, logs } = await inspect(app, [...argv])
      command.assertFailed()
      assert.deepEqual(logs, [`[ red(error) ] ${message}`], argv.join(' '))
    }
  })

  test('the commands folder indexes the command next to agent-stream:purge', async ({ assert }) => {
    // What `adonis-kit index build/commands` (the build) does, on the sources.
    const commands = await new FsLoader(
      new URL('../commands/', import.meta.url).pathname
    ).getMetaData()
    assert.includeMembers(
      commands.map((command) => command.commandName),
      ['agent-stream:purge', 'agent-stream:inspect']
    )
    const inspectCommand = commands.find((c) => c.commandName === 'agent-stream:inspect')!
    assert.deepEqual(inspectCommand.options, { startApp: true })
    assert.deepEqual(
      inspectCommand.args.map((arg) => arg.name),
      ['runId']
    )
    assert.includeMembers(
      inspectCommand.flags.map((flag) => flag.name),
      ['thread', 'chat', 'status', 'limit', 'json']
    )
  })
})

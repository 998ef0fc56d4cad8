import { test } from '@japa/runner'
import { ToolLoopAgent } from 'ai'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'
import { resetTables } from './helpers/db.js'
import { serveApp, postJson } from './helpers/http.js'
import { setupReplica, setupRunner } from './helpers/parking.js'
import { collect, runId } from './helpers/sink.js'
import { finish, scriptedModel, text, toolCall } from './helpers/ai_sdk.js'
import { alice, decider, SECRET, searchThenSend, textOf, tools } from './helpers/ai_sdk_approval.js'

const ADMIN = { 'x-admin': 'yes', 'x-user': 'alice' }

/** Each call's `toolKind`, as its `tool-input-available` frame says. */
const kindsOf = (frames: any[]) =>
  Object.fromEntries(
    frames
      .filter((f) => f.event?.kind === 'tool-input-available')
      .map((f) => [f.event.name, f.event.toolKind])
  )

/** Each tool call's label on an admin page (the run view or the item's conversation). */
const labels = (html: string) =>
  Object.fromEntries(
    [
      ...html.matchAll(
        /Tool call <code><bdi>([^<]+)<\/bdi><\/code>(?: \(<code><bdi>[^<]*<\/bdi><\/code>\))? <span class="kind" title="[^"]*">\((\w+)\)<\/span>/g
      ),
    ].map((match) => [match[1], match[2]])
  )

test.group('AI SDK runner | toolApproval', () => {
  test('toolApproval decides what parks: the call it requires parks, the one it does not runs', async ({
    assert,
  }) => {
    const { ran, tools: set } = tools()
    const model = scriptedModel(searchThenSend())
    const { driver, sink, parking } = await setupRunner(
      aiSdkAgent({
        model,
        tools: set,
        toolApproval: { send_email: 'user-approval', search: 'not-applicable' },
      })
    )
    const id = runId()
    const first = await (await driver.start({ runId: id, input: 'Send it', principal: alice })).done
    assert.equal(first.status, 'parked')
    // search ran in the step without asking anyone; send_email waits.
    assert.deepEqual(ran, [{ tool: 'search', input: { q: 'weekly' } }])
    const parked: any[] = await collect(sink.subscribe(id))
    assert.deepEqual(
      parked.filter((f) => f.t === 'approval').map((f) => f.id),
      ['call_2']
    )
    assert.deepEqual(kindsOf(parked), { search: 'read', send_email: 'action' })
    assert.deepEqual(
      parked.filter((f) => f.event?.kind === 'tool-input-start').map((f) => f.event.toolKind),
      ['read', 'action']
    )
    await parking.decisions.approve(id, 'call_2', decider)
    await driver.settled()
    assert.deepEqual(ran, [
      { tool: 'search', input: { q: 'weekly' } },
      { tool: 'send_email', input: { to: 'team@example.com' } },
    ])
    assert.equal(textOf(await collect(sink.subscribe(id))), 'On it. Done.')
  })

  test('a function per tool decides per call, with its reason as the approval copy', async ({
    assert,
  }) => {
    const { ran, tools: set } = tools()
    const model = scriptedModel([
      [
        ...toolCall('call_1', 'send_email', { to: 'team@example.com' }),
        ...toolCall('call_2', 'send_email', { to: 'someone@elsewhere.test' }),
        ...finish('tool-calls'),
      ],
      [...text('One sent, one asked.'), ...finish()],
    ])
    const { driver, sink } = await setupRunner(
      aiSdkAgent({
        model,
        tools: set,
        toolApproval: {
          send_email: (input: { to: string }) =>
            input.to.endsWith('@example.com')
              ? 'not-applicable'
              : { type: 'user-approval', reason: 'It leaves the company.' },
        },
      })
    )
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send both', principal: alice })
    ).done
    assert.deepEqual(ran, [{ tool: 'send_email', input: { to: 'team@example.com' } }])
    const frames: any[] = await collect(sink.subscribe(id))
    const approvals = frames.filter((f) => f.t === 'approval')
    assert.deepEqual(
      approvals.map((f) => f.id),
      ['call_2']
    )
    assert.deepEqual(approvals[0].confirmation, {
      title: 'Run send_email?',
      description: 'It leaves the company.',
    })
    // The label is the call's: the one that asked is an action, the other ran as a read.
    const byId = Object.fromEntries(
      frames
        .filter((f) => f.event?.kind === 'tool-input-available')
        .map((f) => [f.event.id, f.event.toolKind])
    )
    assert.deepEqual(byId, { call_1: 'read', call_2: 'action' })
  })

  test('toolApproval takes precedence over the deprecated needsApproval; needsApproval alone still parks', async ({
    assert,
  }) => {
    const overridden = tools({ needsApproval: true })
    const model = scriptedModel(searchThenSend())
    const runner = aiSdkAgent({
      model,
      tools: overridden.tools,
      toolApproval: { send_email: 'not-applicable' },
    })
    const { driver, sink } = await setupRunner(runner)
    const id = runId()
    const outcome = await (
      await driver.start({ runId: id, input: 'Send it', principal: alice })
    ).done
    assert.deepEqual(outcome, { status: 'finished' })
    assert.lengthOf(overridden.ran, 2)
    assert.deepEqual(kindsOf(await collect(sink.subscribe(id))), {
      search: 'read',
      send_email: 'read',
    })

    const legacy = tools({ needsApproval: true })
    const second = runId()
    const stack = setupReplica(
      aiSdkAgent({ model: scriptedModel(searchThenSend()), tools: legacy.tools })
    )
    const parked = await (
      await stack.driver.start({ runId: second, input: 'Send it', principal: alice })
    ).done
    assert.equal(parked.status, 'parked')
    assert.deepEqual(kindsOf(await collect(stack.sink.subscribe(second))), {
      search: 'read',
      send_email: 'action',
    })
  })

  test('a ToolLoopAgent with toolApproval: the same parking and labels through its stream()', async ({
    assert,
  }) => {
    const { ran, tools: set } = tools()
    const model = scriptedModel(searchThenSend())
    const agent = new ToolLoopAgent({
      model,
      tools: set,
      toolApproval: ({ toolCall: call }) =>
        call.toolName === 'send_email' ? 'user-approval' : 'not-applicable',
      experimental_toolApprovalSecret: SECRET,
    })
    const { driver, sink, parking } = await setupRunner(aiSdkAgent({ agent }))
    const id = runId()
    await (
      await driver.start({ runId: id, input: 'Send it', principal: alice })
    ).done
    const parked: any[] = await collect(sink.subscribe(id))
    assert.deepEqual(kindsOf(parked), { search: 'read', send_email: 'action' })
    await parking.decisions.approve(id, 'call_2', decider)
    await driver.settled()
    assert.deepEqual(
      ran.map((r) => r.tool),
      ['search', 'send_email']
    )
    assert.equal(textOf(await collect(sink.subscribe(id))), 'On it. Done.')
  })

  test('the admin page labels each tool call by toolApproval', async ({ assert }) => {
    const { tools: set } = tools()
    const served = await serveApp({
      runner: aiSdkAgent({
        model: scriptedModel(searchThenSend()),
        tools: set,
        toolApproval: { send_email: 'user-approval' },
      }),
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const response = await postJson(`${served.url}/runs`, { message: 'Send it' })
    const { runId: id } = (await response.json()) as { runId: string }
    await served.agentStream.driver.settled()
    const run = await (await fetch(`${served.url}/admin/runs/${id}`, { headers: ADMIN })).text()
    assert.deepEqual(labels(run), { search: 'read', send_email: 'action' })
    const item = await (
      await fetch(`${served.url}/admin/items/${encodeURIComponent(id)}/call_2`, {
        headers: ADMIN,
      })
    ).text()
    assert.deepEqual(labels(item), { search: 'read', send_email: 'action' })
  }).timeout(30_000)
})

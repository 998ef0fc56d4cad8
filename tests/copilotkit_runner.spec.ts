import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent } from '@ag-ui/client'
import { lastValueFrom, toArray } from 'rxjs'
import { AgentStreamRunner } from '../src/copilotkit/index.js'
import { EventSchemas } from 'ag-ui-client-0.0.57'
import { SCENARIOS } from './helpers/scenarios.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { assertConforms, parseSse, type WireEvent } from './helpers/agui.js'

/**
 * `adonis-agent-stream/copilotkit` without CopilotKit: the runner's `run()` / `connect()` /
 * `isRunning()` against the routes, with the official `HttpAgent` as the agent CopilotKit would
 * hand it. The suite with CopilotKit itself is `npm run test:copilotkit`.
 */
test.group('CopilotKit runner (adonis-agent-stream/copilotkit)', () => {
  test('run() drives /agui; connect() re-attaches from the store; 404 is an empty thread', async ({
    assert,
  }) => {
    const served = await serveApp({ runner: scriptedAgent({ steps: ['read', 'approval'] }) })
    await resetTables(await served.app.container.make('lucid.db'))
    const url = `${served.url}/agui`
    const runner = new AgentStreamRunner({ url, headers: { 'x-user': 'alice' } })
    const threadId = `t-${randomUUID()}`

    const agent = new HttpAgent({ url, threadId, headers: { 'x-user': 'alice' } })
    agent.messages.push({ id: 'u1', role: 'user', content: 'Send the weekly report' })
    const input = { threadId, runId: randomUUID(), messages: agent.messages }
    const running = runner.run({ threadId, agent, input })
    assert.isTrue(await runner.isRunning({ threadId }))
    assert.throws(() => runner.run({ threadId, agent, input }), 'Thread already running')
    const ran: WireEvent[] = await lastValueFrom(running.pipe(toArray()))
    await assertConforms(assert, ran)
    assert.equal(ran.at(-1)!.outcome?.type, 'interrupt')
    assert.isFalse(await runner.isRunning({ threadId }))

    // A new runner (a restarted runtime): the thread from the store, in order.
    const restarted = new AgentStreamRunner({ url: () => url })
    const restored: WireEvent[] = await lastValueFrom(
      restarted.connect({ threadId, headers: { 'x-user': 'alice' } }).pipe(toArray())
    )
    await assertConforms(assert, restored)
    // Text the live run sent in several deltas is replayed from one stored row: one delta.
    const kinds = (events: WireEvent[]) =>
      events
        .map((e) => e.type)
        .filter((t, i, all) => t !== 'TEXT_MESSAGE_CONTENT' || all[i - 1] !== t)
    assert.deepEqual(kinds(restored), ['RUN_STARTED', 'MESSAGES_SNAPSHOT', ...kinds(ran.slice(1))])
    assert.deepEqual((restored[1].messages as any[])[0], {
      id: 'u1',
      role: 'user',
      content: 'Send the weekly report',
    })

    // No such thread, or another person's: empty.
    const none = await lastValueFrom(
      restarted
        .connect({ threadId: `t-${randomUUID()}`, headers: { 'x-user': 'alice' } })
        .pipe(toArray())
    )
    assert.deepEqual(none, [])
    const theirs = await lastValueFrom(
      restarted.connect({ threadId, headers: { 'x-user': 'bob' } }).pipe(toArray())
    )
    assert.deepEqual(theirs, [])
    assert.isFalse(await runner.stop({ threadId }))
  })
})

test.group('CopilotKit runner | stop()', () => {
  test("stop() stops the run in the package: the agent aborts, the partial text, then CopilotKit's RUN_FINISHED; stored cancelled", async ({
    assert,
  }) => {
    let aborted = false
    const served = await serveApp({
      runner: {
        async start(ctx) {
          await ctx.writer.write({ t: 'text', v: 'Hello' })
          await ctx.writer.flush?.()
          await new Promise<void>((resolve) =>
            ctx.signal.addEventListener('abort', () => {
              aborted = true
              resolve()
            })
          )
          return { status: 'finished' }
        },
        resume: async () => ({ status: 'finished' }),
      },
    })
    const db = await served.app.container.make('lucid.db')
    await resetTables(db)
    const url = `${served.url}/agui`
    const runner = new AgentStreamRunner({ url })
    const threadId = `t-${randomUUID()}`
    const agent = new HttpAgent({ url, threadId, headers: { 'x-user': 'alice' } })
    agent.messages.push({ id: 'u1', role: 'user', content: 'talk' })
    const running = lastValueFrom(
      runner
        .run({
          threadId,
          agent,
          input: { threadId, runId: randomUUID(), messages: agent.messages },
        })
        .pipe(toArray())
    )
    for (let i = 0; i < 200; i++) {
      if (await db.from('agent_stream_frames').where('kind', 'text').first()) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.isTrue(await runner.stop({ threadId }))
    const ran: WireEvent[] = await running
    assert.isTrue(aborted)
    // CopilotKit's own end of a stopped run: its AG-UI client (0.0.x) refuses `cancelled`.
    assert.equal(ran.at(-1)!.type, 'RUN_FINISHED')
    assert.notProperty(ran.at(-1)!, 'outcome')
    assert.isTrue(ran.some((e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.delta === 'Hello'))
    const row = await db.from('agent_streams').first()
    assert.equal(row.stop_mode, 'keep')

    // The package keeps it cancelled (its own route says so); connect() ends it as run() did.
    const stored = parseSse(
      await (
        await fetch(`${url}/threads/${threadId}`, {
          headers: { 'x-user': 'alice', 'x-ag-ui-client-version': '1.0.0' },
        })
      ).text()
    ).map(({ event }) => event)
    assert.deepEqual(stored.at(-1)!.outcome, { type: 'cancelled' })
    const restored: WireEvent[] = await lastValueFrom(
      runner.connect({ threadId, headers: { 'x-user': 'alice' } }).pipe(toArray())
    )
    await assertConforms(assert, restored)
    const finished = { ...stored.at(-1)! }
    delete finished.outcome
    assert.deepEqual(restored.at(-1), finished)
  })
})

test.group('CopilotKit runner | the client it declares', () => {
  test("run() and connect() declare CopilotKit's AG-UI client: what 0.0.57 parses, whatever the door's default", async ({
    assert,
  }) => {
    // The door serves AG-UI 1.0 whole unless a request says otherwise.
    const served = await serveApp({
      runner: SCENARIOS.cancelled.runner,
      agui: { clientVersion: '1.0.0' },
    })
    await resetTables(await served.app.container.make('lucid.db'))
    const url = `${served.url}/agui`
    const drive = async (runner: AgentStreamRunner, headers: Record<string, string> = {}) => {
      const threadId = `t-${randomUUID()}`
      const agent = new HttpAgent({ url, threadId, headers: { 'x-user': 'alice', ...headers } })
      agent.messages.push({ id: 'u1', role: 'user', content: 'go' })
      const input = { threadId, runId: randomUUID(), messages: agent.messages }
      const ran: WireEvent[] = await lastValueFrom(
        runner.run({ threadId, agent, input }).pipe(toArray())
      )
      const restored: WireEvent[] = await lastValueFrom(
        runner.connect({ threadId, headers: { 'x-user': 'alice' } }).pipe(toArray())
      )
      return { ran, restored }
    }
    const { ran, restored } = await drive(new AgentStreamRunner({ url }))
    for (const events of [ran, restored]) {
      for (const event of events) {
        const parsed = EventSchemas.safeParse(event)
        assert.isTrue(parsed.success, `${event.type} refused by @ag-ui/client 0.0.57`)
      }
      assert.equal(events.at(-1)!.type, 'RUN_FINISHED')
      assert.notProperty(events.at(-1)!, 'outcome')
      assert.notInclude(
        events.map((e) => e.type),
        'SUBAGENT_STARTED'
      )
    }
    // A runner told its CopilotKit runs on 1.0 gets 1.0.
    const whole = await drive(new AgentStreamRunner({ url, clientVersion: '1.0.0' }))
    assert.deepEqual(whole.ran.at(-1)!.outcome, { type: 'cancelled' })
    assert.deepEqual(whole.restored.at(-1)!.outcome, { type: 'cancelled' })
    // An agent that declares its own client is served as it says.
    const own = await drive(new AgentStreamRunner({ url }), { 'X-AG-UI-Client-Version': '1.0.0' })
    assert.deepEqual(own.ran.at(-1)!.outcome, { type: 'cancelled' })
  })
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import fastJsonPatch from 'fast-json-patch'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { AgentRunner } from '../src/runner/contract.js'
import { createRuntime } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { tableNames } from '../src/store/schema.js'
import { parseSse, type WireEvent } from './helpers/agui.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'
import { postJson, readResponse, serveApp } from './helpers/http.js'
import { headlessChat, toolParts } from './helpers/ui_chat.js'

/**
 * The page's state sent with a resume (AG-UI `RunAgentInput.state` with `resume[]`, the useChat
 * approval response's body `state`) is the resumed segment's `ctx.input.state`; without one, the
 * state of the input the run started with. Stored with the decision (the suspension rows, in the
 * decision's commit): a replica that resumes the run after a restart hands it on too; a refused
 * state changes nothing.
 */

/** Asks approval for `send_email` and parks; once resumed, records its input and finishes. */
function parkingAgent() {
  const resumed: any[] = []
  const runner: AgentRunner = {
    async start(ctx) {
      const id = `${ctx.runId}.call`
      await ctx.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id,
          name: 'send_email',
          input: {},
          toolKind: 'action',
        },
      })
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id,
        toolName: 'send_email',
        input: {},
      })
      return { status: 'parked', checkpoint: {} }
    },
    async resume(ctx) {
      resumed.push(ctx.input)
      await ctx.writer.write({ t: 'text', v: 'Done.' })
      return { status: 'finished' }
    },
  }
  return { runner, resumed }
}

const eventsOf = async (response: Response) => parseSse(await response.text()).map((e) => e.event)

const START_STATE = { recipe: 'soup' }
const PAGE_STATE = { recipe: 'stew', servings: 4 }

/** Start a run on `base` with the page's state {@link START_STATE}; its interrupt's id. */
async function parkedRun(base: string) {
  const threadId = `t-${randomUUID()}`
  const messages = [{ id: 'u1', role: 'user', content: 'cook' }]
  const first = await eventsOf(
    await postJson(base, { threadId, runId: randomUUID(), messages, state: START_STATE })
  )
  const [interrupt] = first.at(-1)!.outcome.interrupts as WireEvent[]
  return { threadId, messages, interruptId: interrupt.id as string }
}

/** The AG-UI resume approving `interruptId`, with `extra` fields (the page's state). */
const resumeBody = (run: Awaited<ReturnType<typeof parkedRun>>, extra = {}) => ({
  threadId: run.threadId,
  runId: randomUUID(),
  messages: run.messages,
  resume: [{ interruptId: run.interruptId, status: 'resolved', payload: { approved: true } }],
  ...extra,
})

/** A replica on the test's database: its runtime and AG-UI Fetch handler on loopback. */
async function replica(runner: AgentRunner, fresh = false) {
  const db = createDatabase()
  if (fresh) await resetTables(db)
  const runtime = createRuntime(db, { runner, drainMs: 0 })
  const principal = (request: Request) => {
    const user = request.headers.get('x-user')
    return user ? { id: user } : null
  }
  const server = createServer(
    toNode(createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal }))
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/agui`
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await runtime.close()
    await db.manager.closeAll()
  }
  return { db, runtime, url, close }
}

test.group('The page state on a resume', () => {
  test('AG-UI: the state sent with resume[] is the resumed segment ctx.input.state', async ({
    assert,
  }) => {
    const agent = parkingAgent()
    const { url, app, agentStream } = await serveApp({ runner: agent.runner })
    await resetTables(await app.container.make('lucid.db'))
    const run = await parkedRun(`${url}/agui`)
    const events = await eventsOf(
      await postJson(`${url}/agui`, resumeBody(run, { state: PAGE_STATE }))
    )
    assert.equal(events.at(-1)!.type, 'RUN_FINISHED')
    await agentStream.driver.settled()
    assert.lengthOf(agent.resumed, 1)
    assert.deepEqual(agent.resumed[0].state, PAGE_STATE)
    // The rest of the input is the one the run started with.
    assert.equal(agent.resumed[0].message, 'cook')
  })

  test('AG-UI: a resume without state (or {}) resumes with the state the run started with', async ({
    assert,
  }) => {
    const agent = parkingAgent()
    const { url, app, agentStream } = await serveApp({ runner: agent.runner })
    await resetTables(await app.container.make('lucid.db'))
    const run = await parkedRun(`${url}/agui`)
    await eventsOf(await postJson(`${url}/agui`, resumeBody(run, { state: {} })))
    await agentStream.driver.settled()
    assert.deepEqual(agent.resumed[0].state, START_STATE)
  })

  test('AG-UI: a resume whose state is refused (not an object, over the cap) decides nothing', async ({
    assert,
  }) => {
    const agent = parkingAgent()
    const { url, app, agentStream } = await serveApp({ runner: agent.runner, maxStateBytes: 64 })
    await resetTables(await app.container.make('lucid.db'))
    const run = await parkedRun(`${url}/agui`)
    for (const state of [['stew'], { recipe: 'x'.repeat(100) }]) {
      const refused = await readResponse(await postJson(`${url}/agui`, resumeBody(run, { state })))
      assert.equal(refused.status, 400)
      assert.equal(refused.json.code, 'invalid_input')
      assert.include(refused.json.message, 'state')
      assert.notInclude(refused.text, 'stew')
      const [item] = await agentStream.parking.queries.list({ threadId: run.threadId })
      assert.equal(item.status, 'pending')
    }
    assert.lengthOf(agent.resumed, 0)
    // The page answers again with a state within the cap: that one is the runner's.
    await eventsOf(await postJson(`${url}/agui`, resumeBody(run, { state: { recipe: 'stew' } })))
    await agentStream.driver.settled()
    assert.deepEqual(agent.resumed[0].state, { recipe: 'stew' })
  })

  test('AG-UI: stored with the decision: a replica that resumes after a restart hands it on', async ({
    assert,
    cleanup,
  }) => {
    const first = parkingAgent()
    const a = await replica(first.runner, true)
    cleanup(a.close)
    const run = await parkedRun(a.url)
    await a.runtime.driver.settled()
    // Replica a goes away while the run waits; b (its own pool, runner and memory) takes the
    // page's answer.
    await a.close()
    const second = parkingAgent()
    const b = await replica(second.runner)
    cleanup(b.close)
    const events = await eventsOf(await postJson(b.url, resumeBody(run, { state: PAGE_STATE })))
    assert.equal(events.at(-1)!.type, 'RUN_FINISHED')
    await b.runtime.driver.settled()
    assert.deepEqual(second.resumed[0].state, PAGE_STATE)
    // What the resume was given is stored: the suspension's input, read by whichever replica
    // claims it (and the segment's record, for one that takes a dead writer's segment over).
    const [row] = await b.db
      .connection()
      .from(tableNames().suspensions)
      .where('thread_id', run.threadId)
    assert.deepEqual(JSON.parse(row.input).state, PAGE_STATE)
  })

  test('AG-UI: the agent state a resumed run writes on another replica after a restart is checked against the stored one', async ({
    assert,
    cleanup,
  }) => {
    /** Writes its state, parks; resumed, changes it with deltas that only the stored state takes. */
    const stateful = (): AgentRunner => ({
      async start(ctx) {
        await ctx.writer.write({ t: 'event', event: { kind: 'state', snapshot: { steps: ['a'] } } })
        const id = `${ctx.runId}.call`
        await ctx.writer.write({
          t: 'event',
          event: { kind: 'tool-input-available', id, name: 'cook', input: {}, toolKind: 'action' },
        })
        await ctx.writer.write({ t: 'approval', runId: ctx.runId, id, toolName: 'cook', input: {} })
        return { status: 'parked', checkpoint: {} }
      },
      async resume(ctx) {
        await ctx.writer.write({
          t: 'event',
          event: {
            kind: 'state',
            delta: [
              { op: 'test', path: '/steps', value: ['a'] },
              { op: 'add', path: '/steps/-', value: 'b' },
            ],
          },
        })
        await ctx.writer.write({ t: 'text', v: 'Done.' })
        return { status: 'finished' }
      },
    })
    const a = await replica(stateful(), true)
    cleanup(a.close)
    const threadId = `t-${randomUUID()}`
    const messages = [{ id: 'u1', role: 'user', content: 'cook' }]
    const first = await eventsOf(await postJson(a.url, { threadId, runId: randomUUID(), messages }))
    const [interrupt] = first.at(-1)!.outcome.interrupts as WireEvent[]
    await a.runtime.driver.settled()
    await a.close()
    // Replica b (its own pool, runner and memory: a restart) resumes the run.
    const b = await replica(stateful())
    cleanup(b.close)
    const resumed = await eventsOf(
      await postJson(b.url, resumeBody({ threadId, messages, interruptId: interrupt.id as string }))
    )
    assert.equal(resumed.at(-1)!.type, 'RUN_FINISHED', JSON.stringify(resumed.at(-1)))
    await b.runtime.driver.settled()
    // The page's state, as the client applies the events of both runs.
    let page: any = {}
    for (const event of [...first, ...resumed]) {
      if (event.type === 'STATE_SNAPSHOT') page = structuredClone(event.snapshot)
      if (event.type === 'STATE_DELTA')
        page = fastJsonPatch.applyPatch(page, event.delta as any, true, false).newDocument
    }
    assert.deepEqual(page, { steps: ['a', 'b'] })
  })

  test('useChat: the body state of an approval response is the resumed segment ctx.input.state', async ({
    assert,
  }) => {
    const agent = parkingAgent()
    const { url, app, agentStream } = await serveApp({ runner: agent.runner })
    await resetTables(await app.container.make('lucid.db'))
    const chatId = `chat-${randomUUID()}`
    const chat = headlessChat(url, chatId)
    const asked = await chat.send('cook')
    assert.equal(toolParts(asked)[0].state, 'approval-requested')
    const answered = structuredClone(asked)
    for (const part of answered.parts as any[]) {
      part.state = 'approval-responded'
      part.approval = { ...part.approval, approved: true }
    }
    chat.messages[chat.messages.length - 1] = answered
    const send = (state: unknown) =>
      chat.transport.sendMessages({
        chatId,
        messages: chat.messages,
        trigger: 'submit-message',
        messageId: answered.id,
        abortSignal: undefined,
        body: { state },
      })
    // A state that is not an object: refused, nothing decided.
    await send(['stew']).then(
      () => assert.fail('a refused state was accepted'),
      (error: Error) => assert.include(error.message, 'state')
    )
    assert.lengthOf(await agentStream.parking.queries.pendingOf(asked.id), 1)
    await chat.read(await send(PAGE_STATE), answered)
    await agentStream.driver.settled()
    assert.lengthOf(agent.resumed, 1)
    assert.deepEqual(agent.resumed[0].state, PAGE_STATE)
  })
})

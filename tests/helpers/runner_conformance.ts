/**
 * The runner conformance suite: what every framework's runner must do, played by its email agent
 * (demo/agents/<framework>.ts, the scenario in demo/agents/scenario.ts) on the database the suite
 * runs on. A framework's spec is one line:
 *
 *   runnerConformance('OpenAI Agents', new URL('../demo/agents/openai_agents.ts', import.meta.url))
 *
 * It checks, through the real doors and clients: the AG-UI door with `HttpAgent` (an approval
 * decided from the chat with `resume[]`), the useChat door with `DefaultChatTransport` (approved
 * and rejected from the chat), a decision from the admin page, a resume on the replica that got
 * the decision while a second Node process parked the run, `kill -9` between the decision and the
 * resume (the tool runs once, on the replica that takes the resume over), and a multi-turn
 * thread on both doors (the agent sees the earlier turns).
 */
import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { appendFileSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import type { AgentRunner } from '../../src/runner/contract.js'
import type { EmailAgentOptions } from '../../demo/agents/scenario.js'
import { adminForm } from './decisions.js'
import { createDatabase, resetLangGraphTables, resetTables } from './db.js'
import { serveApp } from './http.js'
import { createRuntime } from '../../src/runtime.js'
import { Replica } from './replica.js'
import { collect, textOf } from './sink.js'
import { headlessChat, textOf as messageText, toolParts } from './ui_chat.js'

type EmailAgent = (options: EmailAgentOptions) => Promise<AgentRunner>

const alice = { id: 'alice' }
const EMAIL = '{"to":"team@example.com"}'

/** A tool log: every run of `send_email` in any process appends `<pid> <input>`. */
async function toolLog() {
  const path = join(tmpdir(), `conformance-${randomUUID()}.log`)
  await writeFile(path, '')
  return {
    path,
    onSend: (input: unknown) => appendFileSync(path, `${process.pid} ${JSON.stringify(input)}\n`),
    lines: async () => (await readFile(path, 'utf8')).split('\n').filter(Boolean),
  }
}

/** Every table of the package's migration, the LangGraph checkpointer's too, made anew. */
async function reset(db: ReturnType<typeof createDatabase>) {
  await resetTables(db)
  await resetLangGraphTables(db)
}

export function runnerConformance(framework: string, agentModule: URL) {
  const load = async (): Promise<EmailAgent> => (await import(agentModule.href)).emailAgent

  /** The AdonisJS app serving both doors and the admin page, running the framework's agent. */
  async function serve() {
    const log = await toolLog()
    const db = createDatabase()
    await reset(db)
    await db.manager.closeAll()
    // Made from the booted app (a `RunnerFactory`), on the app's own database: an agent keeping
    // state of its own (Mastra's snapshots) shares it with the package, as in an app. (On
    // SQLite two connections of one process would lock each other out: better-sqlite3 is
    // synchronous.)
    const emailAgent = await load()
    const served = await serveApp({
      runner: async (app) =>
        emailAgent({ db: await app.container.make('lucid.db'), onSend: log.onSend }),
    })
    return { ...served, log }
  }

  /** Every frame stored in a run's stream (both segments), read back to its end. */
  const stored = async (served: Awaited<ReturnType<typeof serve>>, runId: string) =>
    collect(served.agentStream.sink.subscribe(runId))

  test.group(`${framework} runner | conformance`, () => {
    test('AG-UI door with HttpAgent: text, the tool call, the interrupt, approved from the chat, the tool runs once', async ({
      assert,
    }) => {
      const served = await serve()
      const client = new HttpAgent({
        url: `${served.url}/agui`,
        threadId: `thread-${randomUUID()}`,
        headers: { 'x-user': 'alice' },
        initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
      })
      await client.runAgent()
      const asked = client.messages.at(-1) as any
      assert.equal(asked.role, 'assistant')
      assert.include(asked.content ?? '', 'I will send it.')
      assert.equal(asked.toolCalls?.[0]?.function?.name, 'send_email')
      assert.deepEqual(JSON.parse(asked.toolCalls[0].function.arguments), {
        to: 'team@example.com',
      })
      assert.lengthOf(client.pendingInterrupts, 1)
      assert.deepEqual(await served.log.lines(), [])
      const [interrupt] = client.pendingInterrupts
      await client.runAgent({
        resume: buildResumeArray(client.pendingInterrupts, {
          [interrupt.id]: { status: 'resolved', payload: { approved: true } },
        }),
      })
      assert.lengthOf(client.pendingInterrupts, 0)
      assert.include(JSON.stringify(client.messages), 'Sent.')
      assert.deepEqual(await served.log.lines(), [`${process.pid} ${EMAIL}`])
    }).timeout(60_000)

    test('useChat door with DefaultChatTransport: approved from the chat, then rejected on the next turn', async ({
      assert,
    }) => {
      const served = await serve()
      const chat = headlessChat(served.url, `chat-${randomUUID()}`)
      const first = await chat.send('Send the weekly report')
      assert.include(messageText(first), 'I will send it.')
      const [call] = toolParts(first)
      assert.equal(call.state, 'approval-requested')
      assert.deepEqual(call.input, { to: 'team@example.com' })
      const approved = await chat.answerApprovals(true)
      assert.include(messageText(approved), 'Sent.')
      assert.deepEqual(await served.log.lines(), [`${process.pid} ${EMAIL}`])

      const again = await chat.send('Send the weekly report again')
      assert.equal(toolParts(again).at(-1).state, 'approval-requested')
      const rejected = await chat.answerApprovals(false)
      assert.include(messageText(rejected), 'Not sent.')
      assert.lengthOf(await served.log.lines(), 1, 'the rejected call never ran')
    }).timeout(60_000)

    test('a decision from the admin page resumes the run: the tool runs once', async ({
      assert,
    }) => {
      const served = await serve()
      const threadId = `thread-${randomUUID()}`
      const client = new HttpAgent({
        url: `${served.url}/agui`,
        threadId,
        headers: { 'x-user': 'alice' },
        initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
      })
      await client.runAgent()
      await served.agentStream.driver.settled()
      const [item] = await served.agentStream.parking.queries.list({ threadId })
      assert.exists(item, 'the run parked on an approval')
      const form = await adminForm(served.url, item)
      const answer = await form.post('approve', form.form({ park: String(item.park) }))
      assert.equal(answer.status, 303)
      assert.notInclude(answer.location ?? '', 'notice=E_')
      await served.agentStream.driver.settled()
      const frames: any[] = await stored(served, item.streamRunId)
      assert.include(textOf(frames), 'Sent.')
      assert.deepEqual(await served.log.lines(), [`${process.pid} ${EMAIL}`])
    }).timeout(60_000)

    test('multi-turn on both doors: the next turn sees the earlier ones', async ({ assert }) => {
      const served = await serve()
      const chat = headlessChat(served.url, `chat-${randomUUID()}`)
      await chat.send('Send the weekly report')
      await chat.answerApprovals(true)
      const next = await chat.send('What did I ask?')
      assert.include(messageText(next), 'You asked: Send the weekly report / What did I ask?')

      const client = new HttpAgent({
        url: `${served.url}/agui`,
        threadId: `thread-${randomUUID()}`,
        headers: { 'x-user': 'alice' },
        initialMessages: [{ id: 'u1', role: 'user', content: 'Hello there' }],
      })
      await client.runAgent()
      client.addMessage({ id: 'u2', role: 'user', content: 'What did I ask?' })
      await client.runAgent()
      const last = client.messages.at(-1) as any
      assert.equal(last.role, 'assistant')
      assert.include(last.content, 'You asked: Hello there / What did I ask?')
    }).timeout(60_000)
  })

  test.group(`${framework} runner | conformance across processes`, () => {
    /** This process: a replica of the suite's database with the framework's agent. */
    async function replicaHere() {
      const log = await toolLog()
      const db = createDatabase()
      await reset(db)
      // One database for the package and the agent (see `serve`).
      const runner = await (await load())({ db, onSend: log.onSend })
      const here = createRuntime(db, { runner, claimLeaseMs: 300 })
      const close = async () => {
        await here.sink.shutdown()
        await db.manager.closeAll()
      }
      return { ...here, log, close }
    }

    const other = (log: string) =>
      Replica.start({ claimLeaseMs: 300 } as any, {
        script: 'runner',
        env: { AGENT_MODULE: fileURLToPath(agentModule), TOOL_LOG: log },
      })

    test('parked on a second process, approved here: the resume runs here, the tool once', async ({
      assert,
      cleanup,
    }) => {
      const here = await replicaHere()
      cleanup(here.close)
      const replica = await other(here.log.path)
      const runId = `run-${randomUUID()}`
      const started = await replica.call({ op: 'start', runId, threadId: runId, principal: alice })
      assert.equal(started.result, 'parked')
      const [item] = await here.parking.queries.pendingOf(runId)
      assert.exists(item, 'the other process parked the run')
      replica.kill()
      await here.parking.decisions.approve(item.runId, item.itemId, {
        principal: alice,
        via: 'api',
      })
      await here.driver.settled()
      const frames: any[] = await collect(here.sink.subscribe(runId))
      assert.include(textOf(frames), 'I will send it. ')
      assert.include(textOf(frames), 'Sent.')
      assert.deepEqual(await here.log.lines(), [`${process.pid} ${EMAIL}`])
    }).timeout(60_000)

    for (const op of ['approveThenDie', 'claimThenDie'] as const) {
      const when = op === 'approveThenDie' ? 'the decision' : 'the claim'
      test(`kill -9 after ${when}, before the resume: this process takes it over, the tool runs once`, async ({
        assert,
        cleanup,
      }) => {
        const here = await replicaHere()
        cleanup(here.close)
        const replica = await other(here.log.path)
        const runId = `run-${randomUUID()}`
        const started = await replica.call({
          op: 'start',
          runId,
          threadId: runId,
          principal: alice,
        })
        assert.equal(started.result, 'parked')
        const exited = new Promise((resolve) => replica.child.once('exit', resolve))
        replica.child.send({ id: 99, op, runId, principal: alice })
        await exited
        assert.equal(replica.child.signalCode, 'SIGKILL')
        assert.deepEqual(await here.log.lines(), [], 'the process that died never ran the tool')
        // Once the dead replica's claim lapses (or at once, when it never claimed), the sweeper
        // here takes the resume.
        await new Promise((resolve) => setTimeout(resolve, 350))
        assert.equal(await here.parking.sweeper.resumeReady(), 1)
        await here.driver.settled()
        const frames: any[] = await collect(here.sink.subscribe(runId))
        assert.include(textOf(frames), 'Sent.')
        assert.deepEqual(await here.log.lines(), [`${process.pid} ${EMAIL}`])
      }).timeout(60_000)
    }
  })
}

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai'
import type { AgentRunner } from '../src/runner/contract.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import type { Parking } from '../src/parking/parking.js'
import { scriptedAgent, type ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { jsonClient, serveApp } from './helpers/http.js'
import { headlessChat, textOf, toolParts } from './helpers/ui_chat.js'

/** A served useChat door: where its routes are, and how a decision is made elsewhere. */
interface Door {
  base: string
  parking: Parking
  /** Decide the stream's pending approval elsewhere (not through the chat). */
  decide: (streamRunId: string, action: 'approve' | 'reject') => Promise<void>
}

/** Asks approval for `send_email`, and once resumed says "Done." without the call's result. */
const silentAgent: AgentRunner = {
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
    await ctx.writer.write({ t: 'text', v: 'Done.' })
    return { status: 'finished' }
  },
}

type Options = ScriptedAgentOptions | AgentRunner
const runnerOf = (options: Options) =>
  'start' in options ? (options as AgentRunner) : scriptedAgent(options as ScriptedAgentOptions)

/** The AdonisJS routes; the decision elsewhere is the decision API (`POST /items/...`). */
async function adonisDoor(options: Options): Promise<Door> {
  const { url, app, agentStream } = await serveApp({ runner: runnerOf(options) })
  await resetTables(await app.container.make('lucid.db'))
  const request = jsonClient(url)
  return {
    base: url,
    parking: agentStream.parking,
    async decide(streamRunId, action) {
      const [item] = await agentStream.parking.queries.pendingOf(streamRunId)
      const answer = await request('POST', `/items/${item.runId}/${item.itemId}/${action}`, {})
      if (answer.status !== 200) throw new Error(`the decision API answered ${answer.status}`)
    },
  }
}

/** `createUiMessageFetchHandler` on node:http; the decision elsewhere is the parking service's. */
async function fetchDoor(
  options: Options,
  cleanup: (close: () => Promise<void>) => void
): Promise<Door> {
  const served = await serveRuntime({ runner: runnerOf(options) }, (runtime, principal) =>
    createUiMessageFetchHandler(runtime.uiMessage, { basePath: '/agent', principal })
  )
  cleanup(served.close)
  const parking = served.runtime.parking
  return {
    base: `${served.url}/agent`,
    parking,
    async decide(streamRunId, action) {
      const [item] = await parking.queries.pendingOf(streamRunId)
      const decider = { principal: { id: 'alice' }, via: 'admin' }
      if (action === 'approve')
        await parking.decisions.approve(item.runId, item.itemId, decider, {})
      else await parking.decisions.reject(item.runId, item.itemId, decider, {})
    },
  }
}

const transports = [
  { name: 'AdonisJS routes', open: (o: Options, _c: any) => adonisDoor(o) },
  { name: 'Fetch handler', open: fetchDoor },
]

for (const transport of transports) {
  test.group(`useChat door, a decision made elsewhere first (${transport.name})`, () => {
    test('the page approves after the admin approved: no error, the rest of the answer', async ({
      assert,
      cleanup,
    }) => {
      const door = await transport.open({ steps: ['approval'] }, cleanup)
      const chatId = `chat-${randomUUID()}`
      const page = headlessChat(door.base, chatId)
      // A second page on the same chat that never clicks (another tab).
      const other = headlessChat(door.base, chatId)
      const asked = await page.send('send the report')
      assert.equal(toolParts(asked)[0].state, 'approval-requested')
      // The other tab opens the chat (useChat({ resume: true })) and shows the ask too; it
      // checks with sendMessage() (its message as is): nothing decided yet, nothing changes.
      assert.equal(toolParts((await other.resume())!)[0].state, 'approval-requested')
      const unchanged = await other.continue()
      assert.equal(toolParts(unchanged)[0].state, 'approval-requested')
      assert.lengthOf(await door.parking.queries.pendingOf(asked.id), 1)
      await door.decide(asked.id, 'approve')

      // The page still shows its buttons and clicks Approve: the answer is the turn's
      // continuation (what was decided, then the rest), not a 409.
      const done = await page.answerApprovals(true)
      assert.equal(done.id, asked.id)
      const [call] = toolParts(done)
      assert.equal(call.state, 'output-available')
      assert.isTrue(call.approval.approved)
      assert.deepEqual(call.output.sent, true)
      assert.equal(textOf(done), 'Sent. All done.')
      // Decided once, by the decision made first.
      const [item] = await door.parking.queries.list({ status: 'decided', streamRunId: asked.id })
      assert.equal(item.status, 'approved')
      assert.notEqual(item.decidedVia, 'chat')

      // The tab that never clicked checks again, after the turn finished: what was decided and
      // the rest of the answer (a resume would find nothing active: 204).
      const seen = await other.continue()
      assert.equal(seen.id, asked.id)
      assert.equal(toolParts(seen)[0].state, 'output-available')
      assert.isTrue(toolParts(seen)[0].approval.approved)
      assert.equal(textOf(seen), 'Sent. All done.')
      assert.isNull(await other.resume())
    })

    test('a conflicting click (the admin rejected, the page approves) shows the admin decision', async ({
      assert,
      cleanup,
    }) => {
      const door = await transport.open({ steps: ['approval'] }, cleanup)
      const page = headlessChat(door.base, `chat-${randomUUID()}`)
      const asked = await page.send('send the report')
      await door.decide(asked.id, 'reject')
      const done = await page.answerApprovals(true)
      const [call] = toolParts(done)
      assert.equal(call.state, 'output-denied')
      assert.isFalse(call.approval.approved)
      assert.equal(textOf(done), 'Not sent (rejected). All done.')
      const [item] = await door.parking.queries.list({ status: 'decided', streamRunId: asked.id })
      assert.equal(item.status, 'rejected')
      // The same click sent again (a retry): the same answer, nothing changes.
      const again = structuredClone(page.messages)
      const part = toolParts(again.at(-1)!)[0]
      part.state = 'approval-responded'
      part.approval = { ...part.approval, approved: true }
      page.messages.splice(0, page.messages.length, ...again)
      const twice = await page.continue()
      assert.equal(toolParts(twice)[0].state, 'output-denied')
      assert.lengthOf(
        await door.parking.queries.list({ status: 'decided', streamRunId: asked.id }),
        1
      )
    })

    test('a question set answered elsewhere: the page answers too and sees the first answers', async ({
      assert,
      cleanup,
    }) => {
      const door = await transport.open({ steps: ['question'] }, cleanup)
      const page = headlessChat(door.base, `chat-${randomUUID()}`)
      const asked = await page.send('go')
      const [item] = await door.parking.queries.pendingOf(asked.id)
      await door.parking.decisions.answer(
        item.runId,
        item.itemId,
        { principal: { id: 'alice' }, via: 'admin' },
        { answers: { format: ['csv'] } }
      )
      const done = await page.answerQuestions({ answers: { format: ['pdf'] } })
      const [questions] = toolParts(done)
      assert.equal(questions.state, 'output-available')
      assert.deepEqual(questions.output.answers.format, ['csv'])
      assert.equal(textOf(done), 'Format: csv. All done.')
    })

    test('an approved call its run never reports: the turn ends it as an error, useChat sends nothing more', async ({
      assert,
      cleanup,
    }) => {
      const door = await transport.open(silentAgent, cleanup)
      const page = headlessChat(door.base, `chat-${randomUUID()}`)
      const asked = await page.send('send it')
      await door.decide(asked.id, 'approve')
      const done = await page.answerApprovals(true)
      const [call] = toolParts(done)
      assert.equal(call.state, 'output-error')
      assert.equal(call.errorText, "The run ended without this tool call's result.")
      assert.equal(textOf(done), 'Done.')
      // Left `approval-responded`, the AI SDK's own predicate would send it again, for ever.
      assert.isFalse(
        await lastAssistantMessageIsCompleteWithApprovalResponses({ messages: page.messages })
      )
    })

    test('an approval that lapsed: refused until the expiry settles it, then its outcome', async ({
      assert,
      cleanup,
    }) => {
      const door = await transport.open({ steps: ['approval'], expiresInMs: 1 }, cleanup)
      const chatId = `chat-${randomUUID()}`
      const page = headlessChat(door.base, chatId)
      await page.send('send the report')
      const answered = structuredClone(page.messages)
      const part = toolParts(answered.at(-1)!)[0]
      part.state = 'approval-responded'
      part.approval = { ...part.approval, approved: true }
      // Past its deadline, not settled yet: the service's 410, nothing written.
      const early = await fetch(`${door.base}/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'alice' },
        body: JSON.stringify({ id: chatId, messages: answered }),
      })
      assert.equal(early.status, 410)
      assert.equal(((await early.json()) as { code: string }).code, 'E_DECISION_LAPSED')
      assert.equal(await door.parking.sweeper.expireLapsed(), 1)
      // Settled by the expiry: the click's answer is that outcome and the rest of the turn.
      const done = await page.answerApprovals(true)
      const [call] = toolParts(done)
      assert.equal(call.state, 'output-denied')
      assert.isFalse(call.approval.approved)
      assert.equal(textOf(done), 'Not sent (expired). All done.')
    })
  })
}

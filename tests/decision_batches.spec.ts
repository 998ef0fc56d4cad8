import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { UIMessage } from 'ai'
import type { AgentRunner } from '../src/runner/contract.js'
import type { Parking } from '../src/parking/parking.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { jsonClient, serveApp } from './helpers/http.js'
import { parseSse } from './helpers/agui.js'
import { headlessChat, toolParts } from './helpers/ui_chat.js'
import { aguiInput, emailAgent, tablesSnapshot } from './helpers/decisions.js'

/**
 * Issue 21, item 6: a request's whole batch of decisions (a useChat message answering several
 * approvals, an AG-UI `resume[]`) is checked before any is applied, and applied in one
 * transaction or not at all. A refused batch changes no row of any table and runs no tool: an
 * item decided twice in one message, one decision among valid ones that breaks a rule (not the
 * approver's, an edit its tool's schema does not allow). On both doors and both transports.
 */

interface Served {
  /** Where the AG-UI door is (`POST` a `RunAgentInput`). */
  agui: string
  /** Where the useChat door's routes are (`<chat>/chat`). */
  chat: string
  parking: Parking
  settled: () => Promise<void>
  snapshot: () => Promise<string>
}

/** The AdonisJS routes of a real app. */
async function adonis(runner: AgentRunner): Promise<Served> {
  const { url, app, agentStream } = await serveApp({ runner })
  const db = await app.container.make('lucid.db')
  await resetTables(db)
  return {
    agui: `${url}/agui`,
    chat: url,
    parking: agentStream.parking,
    settled: () => agentStream.driver.settled(),
    snapshot: () => tablesSnapshot(db),
  }
}

/** Both doors' Fetch handlers on one bare node:http server. */
async function fetchHandlers(
  runner: AgentRunner,
  cleanup: (close: () => Promise<void>) => void
): Promise<Served> {
  const served = await serveRuntime({ runner }, (runtime, principal) => {
    const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
    const chat = createUiMessageFetchHandler(runtime.uiMessage, { basePath: '/agent', principal })
    return (request) =>
      new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
  })
  cleanup(served.close)
  // A second connection to the same database, to read every table.
  const db = createDatabase()
  cleanup(() => db.manager.closeAll())
  return {
    agui: `${served.url}/agui`,
    chat: `${served.url}/agent`,
    parking: served.runtime.parking,
    settled: () => served.runtime.driver.settled(),
    snapshot: () => tablesSnapshot(db),
  }
}

const transports = [
  { name: 'AdonisJS routes', open: (runner: AgentRunner, _: any) => adonis(runner) },
  { name: 'Fetch handlers', open: fetchHandlers },
]

/** POST a chat body as alice; the answer read whole. */
async function postChat(served: Served, body: unknown) {
  const response = await fetch(`${served.chat}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  let json: any = null
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: response.status, text, json }
}

/** The page's messages with the last (the assistant's) given `parts`, as a chat request body. */
function chatBody(chatId: string, messages: UIMessage[], parts: unknown[]) {
  const last = { ...messages.at(-1)!, parts } as UIMessage
  return {
    id: chatId,
    messages: [...messages.slice(0, -1), last],
    trigger: 'submit-message',
    messageId: last.id,
  }
}

/** A tool part answered as `addToolApprovalResponse` does. */
const responded = (part: any, approved: boolean) => ({
  ...part,
  state: 'approval-responded',
  approval: { ...part.approval, approved },
})

for (const transport of transports) {
  test.group(`Item 6: a batch of decisions is all or nothing (${transport.name})`, () => {
    test('useChat: one message approves and rejects the same approval: refused, nothing changed, nothing ran', async ({
      assert,
      cleanup,
    }) => {
      const { runner, ran } = await emailAgent([{ to: 'team@example.com' }])
      const served = await transport.open(runner, cleanup)
      const chatId = `chat-${randomUUID()}`
      const page = headlessChat(served.chat, chatId)
      const asked = await page.send('send it')
      await served.settled()
      const [part] = toolParts(asked)
      assert.equal(part.state, 'approval-requested')
      const before = await served.snapshot()
      for (const parts of [
        [...asked.parts.filter((p) => p !== part), responded(part, true), responded(part, false)],
        [responded(part, false), responded(part, true)],
        [responded(part, true), responded(part, true)],
      ]) {
        const refused = await postChat(served, chatBody(chatId, page.messages, parts))
        assert.equal(refused.status, 422, refused.text)
        assert.equal(refused.json.code, 'E_INVALID_DECISION')
        assert.include(refused.json.message, '"distinctItems" rule')
        await served.settled()
        assert.equal(await served.snapshot(), before)
        assert.deepEqual(ran, [])
      }
      // The same approval answered once: decided, and the call runs.
      const done = await page.answerApprovals(true)
      await served.settled()
      assert.equal(toolParts(done)[0].state, 'output-available')
      assert.deepEqual(ran, [{ to: 'team@example.com' }])
    })

    test('useChat: two approvals, the second not the person’s to decide: 403, the first not applied', async ({
      assert,
      cleanup,
    }) => {
      const { runner, ran } = await emailAgent(
        [{ to: 'team@example.com' }, { to: 'boss@example.com' }],
        { approver: (input) => (input.to === 'boss@example.com' ? 'boss' : 'requester') }
      )
      const served = await transport.open(runner, cleanup)
      const chatId = `chat-${randomUUID()}`
      const page = headlessChat(served.chat, chatId)
      const asked = await page.send('send both')
      await served.settled()
      const parts = toolParts(asked)
      assert.lengthOf(parts, 2)
      const before = await served.snapshot()
      const refused = await postChat(
        served,
        chatBody(chatId, page.messages, [responded(parts[0], true), responded(parts[1], true)])
      )
      assert.equal(refused.status, 403, refused.text)
      assert.equal(refused.json.code, 'E_DECISION_FORBIDDEN')
      await served.settled()
      assert.equal(await served.snapshot(), before)
      assert.deepEqual(ran, [])
      const pending = await served.parking.queries.pendingOf(asked.id)
      assert.lengthOf(pending, 2)
    })

    test('AG-UI: resume[] with a valid approval and an edit the tool schema refuses: refused whole, nothing ran', async ({
      assert,
      cleanup,
    }) => {
      const { runner, ran } = await emailAgent([
        { to: 'team@example.com' },
        { to: 'boss@example.com' },
      ])
      const served = await transport.open(runner, cleanup)
      const request = jsonClient(served.agui)
      const threadId = `t-${randomUUID()}`
      const started = await request('POST', '', aguiInput(threadId))
      const interrupts = parseSse(started.text).at(-1)!.event.outcome.interrupts
      assert.lengthOf(interrupts, 2)
      await served.settled()
      const before = await served.snapshot()
      const resume = (entries: unknown[]) =>
        request('POST', '', aguiInput(threadId, { resume: entries }))
      const ok = (id: string) => ({
        interruptId: id,
        status: 'resolved',
        payload: { approved: true },
      })
      for (const [entries, code] of [
        [
          [
            ok(interrupts[0].id),
            {
              interruptId: interrupts[1].id,
              status: 'resolved',
              payload: { approved: true, editedArgs: { to: 42 } },
            },
          ],
          'invalid_resume_payload',
        ],
        [
          [
            ok(interrupts[0].id),
            ok(interrupts[1].id),
            { interruptId: interrupts[1].id, status: 'resolved', payload: { approved: false } },
          ],
          'duplicate_interrupt',
        ],
      ] as const) {
        const refused = await resume([...entries])
        const events = parseSse(refused.text).map((e) => e.event)
        assert.deepEqual(
          events.map((e) => [e.type, e.code]),
          [['RUN_ERROR', code]]
        )
        await served.settled()
        assert.equal(await served.snapshot(), before)
        assert.deepEqual(ran, [])
      }
      const done = await resume([ok(interrupts[0].id), ok(interrupts[1].id)])
      assert.equal(parseSse(done.text).at(-1)!.event.type, 'RUN_FINISHED')
      await served.settled()
      assert.sameDeepMembers(ran, [{ to: 'team@example.com' }, { to: 'boss@example.com' }])
    })
  })
}

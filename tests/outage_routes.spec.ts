import { test } from '@japa/runner'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import type { AgentRunner } from '../src/runner/contract.js'
import { createRuntime } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { DIALECT, createDatabase, resetTables, snapshotTables } from './helpers/db.js'
import { canStartPrivateServer, privateServerFor, type PrivateServer } from './helpers/db_server.js'
import { toNode } from './helpers/fetch_node.js'
import { serveApp } from './helpers/http.js'
import { sleep } from './helpers/sink.js'

/**
 * Issue 21 item 14: while the database is away, every route of both transports (the AdonisJS
 * routes: both doors, the native runs, decisions, cancel, the admin console; the Fetch handlers
 * of both doors) answers 503 `database_unavailable` `{ code, message }` with `Retry-After`,
 * nothing of the driver's text (no address, no port, no SQL), and changes nothing: every table
 * is as it was once the database is back. A private server, stopped and started by the test.
 */
const SKIP = DIALECT === 'sqlite' || !canStartPrivateServer(DIALECT)
const SKIP_REASON =
  'needs DB=pg or DB=mysql and the server binaries (SQLite is a file: it has no outage to answer)'

/** Asks approval for `call_1` (after a little text), then parks. */
const parking: AgentRunner = {
  async start(ctx) {
    await ctx.writer.write({ t: 'text', v: 'May I? ' })
    await ctx.writer.write({
      t: 'approval',
      runId: ctx.runId,
      id: 'call_1',
      toolName: 'pay',
      input: { n: 1 },
    })
    return { status: 'parked', checkpoint: { at: 1 } }
  },
  resume: async () => ({ status: 'finished' }),
}

const json = { 'content-type': 'application/json', 'x-user': 'alice' }
const chatBody = (id: string, text = 'hello') => ({
  id,
  messages: [{ id: `u-${randomUUID()}`, role: 'user', parts: [{ type: 'text', text }] }],
  trigger: 'submit-message',
})
const aguiBody = (threadId: string, runId: string) => ({
  threadId,
  runId,
  state: {},
  tools: [],
  context: [],
  forwardedProps: {},
  messages: [{ id: `u-${randomUUID()}`, role: 'user', content: 'go' }],
})

/** The Fetch handlers of both doors on a bare `node:http` server, on the private server's database. */
async function serveFetch(server: PrivateServer) {
  const db = createDatabase(server.connection)
  const runtime = createRuntime(db, { runner: parking })
  const principal = (request: Request) => {
    const user = request.headers.get('x-user')
    return user ? { id: user } : null
  }
  const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
  const chat = createUiMessageFetchHandler(runtime.uiMessage, { basePath: '/agent', principal })
  const http = createServer(
    toNode((request) =>
      new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
    )
  )
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  const close = async () => {
    http.closeAllConnections()
    await new Promise((resolve) => http.close(resolve))
    await runtime.driver.settled()
    await runtime.sink.shutdown()
    await db.manager.closeAll()
  }
  return { url, runtime, close }
}

test.group(
  'Database outage: every route answers 503 with Retry-After (private server)',
  (group) => {
    const server = privateServerFor(group, DIALECT as 'pg' | 'mysql', SKIP)

    test('both transports, every route: 503 { code, message }, no driver text, nothing changed', async ({
      assert,
      cleanup,
    }) => {
      const adonis = await serveApp({ runner: parking }, undefined, {
        connection: server().connection,
      })
      const db = await adonis.app.container.make('lucid.db')
      await resetTables(db)
      const bare = await serveFetch(server())
      cleanup(() => bare.close())

      // What there is to act on: a native run, an AG-UI thread and a chat, each parked on `call_1`.
      const started = await fetch(`${adonis.url}/runs`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ message: 'go' }),
      })
      const { runId } = (await started.json()) as { runId: string }
      const threadId = `t-${randomUUID()}`
      const aguiRunId = `r-${randomUUID()}`
      await (
        await fetch(`${adonis.url}/agui`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify(aguiBody(threadId, aguiRunId)),
        })
      ).text()
      const chatId = `c-${randomUUID()}`
      await (
        await fetch(`${adonis.url}/chat`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify(chatBody(chatId)),
        })
      ).text()
      await adonis.agentStream.driver.settled()
      // The admin form's token and cookie, from its page (read while the database is up).
      const admin = { 'x-user': 'alice', 'x-admin': 'yes' }
      const itemPage = await fetch(`${adonis.url}/admin/items/${runId}/call_1`, { headers: admin })
      assert.equal(itemPage.status, 200)
      const cookie = itemPage.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ')
      const token = /name="agent_stream_csrf" value="([^"]+)"/.exec(await itemPage.text())?.[1]
      assert.isString(token)
      const adminHeaders = { ...admin, cookie }

      const before = await snapshotTables(db)
      await server().stop()

      const A = adonis.url
      const F = bare.url
      const post = (body: unknown) => ({
        method: 'POST',
        headers: json,
        body: JSON.stringify(body),
      })
      const asked: [string, string, RequestInit?][] = [
        // AdonisJS: the AG-UI door
        ['adonis agui run', `${A}/agui`, post(aguiBody(`t-${randomUUID()}`, `r-${randomUUID()}`))],
        ['adonis agui resume', `${A}/agui`, post(aguiBody(threadId, `r-${randomUUID()}`))],
        ['adonis agui reattach', `${A}/agui/runs/${aguiRunId}`, { headers: json }],
        ['adonis agui threads', `${A}/agui/threads`, { headers: json }],
        ['adonis agui attach', `${A}/agui/threads/${threadId}`, { headers: json }],
        // AdonisJS: the useChat door
        ['adonis chat list', `${A}/chat`, { headers: json }],
        ['adonis chat send', `${A}/chat`, post(chatBody(`c-${randomUUID()}`))],
        ['adonis chat continue', `${A}/chat`, post(chatBody(chatId, 'more'))],
        ['adonis chat resume', `${A}/chat/${chatId}/stream`, { headers: json }],
        ['adonis chat messages', `${A}/chat/${chatId}/messages`, { headers: json }],
        // AdonisJS: native routes, decisions, cancel
        ['adonis runs start', `${A}/runs`, post({ message: 'go' })],
        ['adonis runs stream', `${A}/runs/${runId}/stream`, { headers: json }],
        ['adonis runs cancel', `${A}/runs/${runId}/cancel`, post({})],
        ['adonis approve', `${A}/items/${runId}/call_1/approve`, post({})],
        ['adonis reject', `${A}/items/${runId}/call_1/reject`, post({ reason: 'no' })],
        ['adonis answer', `${A}/items/${runId}/call_1/answer`, post({ answers: {} })],
        // AdonisJS: the admin console
        ['admin page', `${A}/admin`, { headers: adminHeaders }],
        ['admin items', `${A}/admin/items`, { headers: adminHeaders }],
        ['admin item', `${A}/admin/items/${runId}/call_1`, { headers: adminHeaders }],
        ['admin history', `${A}/admin/history`, { headers: adminHeaders }],
        ['admin events', `${A}/admin/events`, { headers: adminHeaders }],
        ['admin runs', `${A}/admin/runs`, { headers: adminHeaders }],
        ['admin run', `${A}/admin/runs/${runId}`, { headers: adminHeaders }],
        [
          'admin decide',
          `${A}/admin/items/${runId}/call_1/approve`,
          {
            method: 'POST',
            headers: { ...adminHeaders, 'content-type': 'application/x-www-form-urlencoded' },
            body: `park=1&agent_stream_csrf=${encodeURIComponent(token!)}`,
            redirect: 'manual',
          },
        ],
        // Fetch handlers: the AG-UI door
        ['fetch agui run', `${F}/agui`, post(aguiBody(`t-${randomUUID()}`, `r-${randomUUID()}`))],
        ['fetch agui resume', `${F}/agui`, post(aguiBody(threadId, `r-${randomUUID()}`))],
        ['fetch agui reattach', `${F}/agui/runs/${aguiRunId}`, { headers: json }],
        ['fetch agui threads', `${F}/agui/threads`, { headers: json }],
        ['fetch agui attach', `${F}/agui/threads/${threadId}`, { headers: json }],
        // Fetch handlers: the useChat door
        ['fetch chat list', `${F}/agent/chat`, { headers: json }],
        ['fetch chat send', `${F}/agent/chat`, post(chatBody(`c-${randomUUID()}`))],
        ['fetch chat continue', `${F}/agent/chat`, post(chatBody(chatId, 'more'))],
        ['fetch chat resume', `${F}/agent/chat/${chatId}/stream`, { headers: json }],
        ['fetch chat messages', `${F}/agent/chat/${chatId}/messages`, { headers: json }],
      ]
      const wrong: string[] = []
      for (const [what, url, init] of asked) {
        let response: Response
        let text: string
        try {
          response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) })
          text = await response.text()
        } catch (error) {
          wrong.push(`${what}: ${String(error)}`)
          continue
        }
        let body: unknown = null
        try {
          body = JSON.parse(text)
        } catch {}
        const ok =
          response.status === 503 &&
          Number(response.headers.get('retry-after')) >= 1 &&
          /^application\/json/.test(response.headers.get('content-type') ?? '') &&
          JSON.stringify(body && Object.keys(body).sort()) === '["code","message"]' &&
          (body as { code: string }).code === 'database_unavailable' &&
          !text.includes('127.0.0.1') &&
          !text.includes(String(server().port)) &&
          !/ECONN|terminat|connect|select |insert |update /i.test(text)
        if (!ok) wrong.push(`${what}: ${response.status} ${text.slice(0, 200)}`)
      }
      assert.deepEqual(wrong, [])

      await server().start()
      // Nothing asked during the outage lands afterwards either.
      await sleep(1500)
      await adonis.agentStream.driver.settled()
      await bare.runtime.driver.settled()
      assert.equal(await snapshotTables(db), before)
    })
      .skip(SKIP, SKIP_REASON)
      .timeout(120_000)
  }
)

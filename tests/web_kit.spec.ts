import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import type { AgentRunner } from '../src/runner/contract.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { tableNames } from '../src/store/schema.js'
import { readResponse } from './helpers/http.js'
import { cookieClient, serveWebKit } from './helpers/web_kit.js'

/**
 * The package inside an AdonisJS web app as its starter kit sets one up (session auth, shield's
 * stock config with CSRF on, the stock auth middleware and exception handler), its routes
 * behind `middleware.auth()` as the README shows (`tests/helpers/web_kit.ts`).
 */

/** Every JSON or SSE GET of the package (ids need not exist: auth answers first). */
const READS = [
  '/agent/agui/runs/r1',
  '/agent/agui/threads/t1',
  '/agent/chat/c1/stream',
  '/agent/runs/r1/stream',
  '/agent/admin/items?view=pending',
  '/agent/admin/events',
]

/** Every JSON POST of the package, with a body of the right type. */
const WRITES = [
  '/agent/agui',
  '/agent/chat',
  '/agent/runs',
  '/agent/runs/r1/cancel',
  '/agent/agui/threads/t1/stop',
  '/agent/agui/runs/r1/stop',
  '/agent/chat/c1/stop',
  '/agent/items/r1/i1/approve',
  '/agent/items/r1/i1/reject',
  '/agent/items/r1/i1/answer',
]

/** How `EventSource`, `fetch`, `HttpAgent` and `useChat` ask (none of them asks for JSON only). */
const ACCEPTS = ['text/event-stream', '*/*']

test.group('The package in an AdonisJS web app (session auth, shield)', () => {
  test('nobody signed in: 401 JSON on every JSON and SSE route, never a redirect', async ({
    assert,
  }) => {
    const { url } = await serveWebKit({ runner: scriptedAgent() })
    // No session at all: every route answers 401, a write too (shield refuses it first, its
    // CSRF check running before auth; the package asks the app's guard and says sign in).
    const nobody = cookieClient(url)
    for (const path of READS) {
      for (const accept of ACCEPTS) {
        const answer = await readResponse(await nobody.fetch(path, { headers: { accept } }))
        assert.equal(answer.status, 401, `${path} (${accept})`)
        assert.deepEqual(answer.json, {
          code: 'unauthenticated',
          message: 'Sign in to use this route',
        })
        assert.isNull(answer.headers.get('location'))
      }
    }
    for (const path of WRITES) {
      const answer = await readResponse(
        await nobody.fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'accept': '*/*' },
          body: '{}',
        })
      )
      assert.equal(answer.status, 401, path)
      assert.equal(answer.json?.code, 'unauthenticated', path)
      assert.isNull(answer.headers.get('location'))
    }
    // A session whose user signed out (or whose sign-in lapsed) with a valid token: 401 on
    // every route, the writes too.
    const gone = cookieClient(url)
    await gone.signIn('alice@example.com')
    const token = await gone.pageToken('/login')
    const out = await gone.fetch('/logout', { method: 'POST', headers: { 'x-csrf-token': token } })
    assert.equal(out.status, 204)
    for (const path of READS) {
      const answer = await readResponse(
        await gone.fetch(path, { headers: { accept: 'text/event-stream' } })
      )
      assert.equal(answer.status, 401, path)
      assert.equal(answer.json?.code, 'unauthenticated')
    }
    for (const path of WRITES) {
      const answer = await readResponse(
        await gone.fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': token },
          body: '{}',
        })
      )
      assert.equal(answer.status, 401, path)
      assert.equal(answer.json?.code, 'unauthenticated')
    }
    // The admin console's HTML views keep the app's own login redirect (a browser navigating).
    for (const path of ['/agent/admin', '/agent/admin/history', '/agent/admin/runs']) {
      const page = await nobody.fetch(path, { headers: { accept: 'text/html' } })
      assert.equal(page.status, 302, path)
      assert.match(page.headers.get('location') ?? '', /^\/login/)
    }
  }).timeout(60_000)

  test('a write without the page token is 403 JSON and changes nothing; with it, it runs', async ({
    assert,
  }) => {
    const { url, app } = await serveWebKit({ runner: scriptedAgent() })
    const db = await app.container.make('lucid.db')
    const streams = async () => (await db.from(tableNames().streams).select('run_id')).length
    const alice = cookieClient(url)
    await alice.signIn('alice@example.com')
    const start = (headers: Record<string, string>) =>
      alice.fetch('/agent/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ message: 'go' }),
      })
    const forged: Record<string, string>[] = [
      {},
      { 'x-csrf-token': 'no' },
      { 'x-xsrf-token': 'no' },
    ]
    for (const headers of forged) {
      const refused = await readResponse(await start(headers))
      assert.equal(refused.status, 403)
      assert.deepEqual(Object.keys(refused.json), ['code', 'message'])
      assert.equal(refused.json.code, 'invalid_csrf_token')
    }
    assert.equal(await streams(), 0)
    // Shield's token as a page sends it: the page's (meta tag) or the XSRF-TOKEN cookie's.
    const fromPage = await start({ 'x-csrf-token': await alice.pageToken('/chat') })
    assert.equal(fromPage.status, 201)
    const fromCookie = await start({ 'x-xsrf-token': alice.xsrf()! })
    assert.equal(fromCookie.status, 201)
  }).timeout(60_000)

  test('HttpAgent: a run and its approval with the token in its headers; without it, an error', async ({
    assert,
  }) => {
    const { url } = await serveWebKit({ runner: scriptedAgent({ steps: ['read', 'approval'] }) })
    const alice = cookieClient(url)
    await alice.signIn('alice@example.com')
    const agentFor = (headers: Record<string, string>) =>
      new HttpAgent({
        url: `${url}/agent/agui`,
        threadId: `thread-${randomUUID()}`,
        headers: { cookie: alice.cookie(), ...headers },
        initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
      })
    // Without the token: runAgent() rejects, naming the refusal (not a run with zero events).
    const bare = agentFor({})
    const events: string[] = []
    const failed = await bare
      .runAgent({}, { onEvent: ({ event }) => void events.push(event.type) })
      .then(
        () => null,
        (error: Error) => error
      )
    assert.instanceOf(failed, Error)
    assert.include(String(failed?.message), '403')
    assert.deepEqual(events, [])
    // With it (the XSRF-TOKEN cookie as X-XSRF-TOKEN, as a page script reads it).
    const agent = agentFor({ 'X-XSRF-TOKEN': alice.xsrf()! })
    await agent.runAgent()
    assert.lengthOf(agent.pendingInterrupts, 1)
    const [interrupt] = agent.pendingInterrupts
    await agent.runAgent({
      resume: buildResumeArray(agent.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    assert.lengthOf(agent.pendingInterrupts, 0)
    const text = agent.messages
      .filter((m) => m.role === 'assistant' && typeof m.content === 'string')
      .map((m) => m.content)
      .join('')
    assert.include(text, 'Revenue was 42.')
  }).timeout(60_000)
})

test.group('Shared state in an AdonisJS web app (session auth, shield)', () => {
  test("HttpAgent: the page's state reaches the runner on the start and on the approval's resume; the agent's comes back", async ({
    assert,
  }) => {
    const seen: [string, unknown][] = []
    const inner = scriptedAgent({ steps: ['read', 'approval'] })
    const snapshot = (value: Record<string, unknown>) =>
      ({ t: 'event', event: { kind: 'state', snapshot: value } }) as const
    const runner: AgentRunner = {
      async start(ctx) {
        const page = (ctx.input as { state?: Record<string, unknown> }).state
        seen.push(['start', page])
        await ctx.writer.write(snapshot({ ...page, phase: 'asked' }))
        return inner.start(ctx)
      },
      async resume(ctx) {
        const page = (ctx.input as { state?: Record<string, unknown> }).state
        seen.push(['resume', page])
        await ctx.writer.write(snapshot({ ...page, phase: 'done' }))
        return inner.resume(ctx)
      },
    }
    const { url } = await serveWebKit({ runner })
    const alice = cookieClient(url)
    await alice.signIn('alice@example.com')
    const agent = new HttpAgent({
      url: `${url}/agent/agui`,
      threadId: `thread-${randomUUID()}`,
      headers: { 'cookie': alice.cookie(), 'X-XSRF-TOKEN': alice.xsrf()! },
      initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
      initialState: { recipe: 'soup' },
    })
    await agent.runAgent()
    assert.deepEqual(agent.state, { recipe: 'soup', phase: 'asked' })
    // The page edits the state while the approval waits; the resume carries the edit.
    agent.setState({ ...agent.state, servings: 4 })
    const [interrupt] = agent.pendingInterrupts
    await agent.runAgent({
      resume: buildResumeArray(agent.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    assert.deepEqual(seen, [
      ['start', { recipe: 'soup' }],
      ['resume', { recipe: 'soup', phase: 'asked', servings: 4 }],
    ])
    assert.deepEqual(agent.state, { recipe: 'soup', phase: 'done', servings: 4 })
  }).timeout(60_000)
})

import { test } from '@japa/runner'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { HttpAgent } from '@ag-ui/client'
import type { AgentRunner } from '../src/runner/contract.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { resetTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'
import { readResponse, serveApp } from './helpers/http.js'
import { headlessChat } from './helpers/ui_chat.js'

/**
 * A person's chats (`GET /chat`) and threads (`GET /agui/threads`): newest first, keyset pages,
 * owner-only, the same on the AdonisJS routes and the two Fetch-API handlers.
 */

/**
 * What a turn does, by what the person said: `name:<title>` writes a `title` event first, `park`
 * parks on an approval, anything else answers `ok`.
 */
const runner: AgentRunner = {
  async start(ctx) {
    const message = String((ctx.input as { message?: unknown }).message ?? '')
    if (message.startsWith('name:')) {
      await ctx.writer.write({ t: 'event', event: { kind: 'title', title: message.slice(5) } })
    }
    if (message.startsWith('park')) {
      await ctx.writer.write({
        t: 'approval',
        runId: ctx.runId,
        id: `${ctx.runId}.call`,
        toolName: 'send_email',
        input: { to: 'team@example.com' },
        approver: 'requester',
      })
      return { status: 'parked', checkpoint: {} }
    }
    await ctx.writer.write({ t: 'text', v: 'ok' })
    return { status: 'finished' }
  },
  async resume() {
    return { status: 'finished' }
  },
}

/** The AdonisJS app (routes at its root) and both Fetch handlers (`/ui`, `/ag`) on its runtime. */
async function setup() {
  const served = await serveApp({ runner })
  await resetTables(await served.app.container.make('lucid.db'))
  const principal = (request: Request) => {
    const user = request.headers.get('x-user')
    return user ? { id: user } : null
  }
  const ui = createUiMessageFetchHandler(served.agentStream.uiMessage, {
    basePath: '/ui',
    principal,
  })
  const ag = createAgUiFetchHandler(served.agentStream.door, { basePath: '/ag', principal })
  const bare = createServer(
    toNode((request) => (new URL(request.url).pathname.startsWith('/ui') ? ui : ag)(request))
  )
  await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve))
  const fetchUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`
  let last = 0
  /** Every chat or thread starts in a later millisecond than the one before (a strict order). */
  const later = async () => {
    while (Date.now() <= last) await new Promise((resolve) => setImmediate(resolve))
    last = Date.now()
  }
  const chats = new Map<string, ReturnType<typeof headlessChat>>()
  return {
    ...served,
    fetchUrl,
    close: async () => {
      bare.closeAllConnections()
      await new Promise((resolve) => bare.close(resolve))
    },
    /** A useChat turn in `chatId` (a new chat, or its next turn), read whole. */
    async say(user: string, chatId: string, text: string) {
      await later()
      const chat = chats.get(chatId) ?? headlessChat(served.url, chatId, user)
      chats.set(chatId, chat)
      await chat.send(text)
    },
    /** A new AG-UI thread through `HttpAgent`, its run read whole. */
    async thread(user: string, threadId: string, text: string) {
      await later()
      const agent = new HttpAgent({
        url: `${served.url}/agui`,
        threadId,
        headers: { 'x-user': user },
      })
      agent.messages.push({ id: `${threadId}-u1`, role: 'user', content: text })
      await agent.runAgent({ runId: `${threadId}-r1` })
    },
  }
}

type Setup = Awaited<ReturnType<typeof setup>>

/** GET a list (`path` under `base`) as `user` (none: no principal). */
async function list(base: string, path: string, user: string | null, query = '') {
  return readResponse(
    await fetch(`${base}${path}${query ? `?${query}` : ''}`, {
      headers: user ? { 'x-user': user } : {},
    })
  )
}

/** The four routes of a person's list: both transports, both doors. */
const routes = (ctx: Setup) => ({
  adonisChats: { base: ctx.url, path: '/chat', key: 'chats' },
  fetchChats: { base: ctx.fetchUrl, path: '/ui/chat', key: 'chats' },
  adonisThreads: { base: ctx.url, path: '/agui/threads', key: 'threads' },
  fetchThreads: { base: ctx.fetchUrl, path: '/ag/threads', key: 'threads' },
})

type Route = ReturnType<typeof routes>[keyof ReturnType<typeof routes>]

/** Every page of a list, `limit` at a time, following `next`: the pages' items, in order. */
async function allPages(route: Route, user: string, limit: number) {
  const pages: any[][] = []
  let cursor: string | null = null
  do {
    const query: string = `limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`
    const page = await list(route.base, route.path, user, query)
    if (page.status !== 200) throw new Error(`${route.path}: ${page.status} ${page.text}`)
    pages.push(page.json[route.key])
    cursor = page.json.next
    // A cursor that never ends would be a bug of the list: fail instead of looping.
    if (pages.length > 100) throw new Error(`${route.path}: more pages than items`)
  } while (cursor !== null)
  return pages
}

/** An item's id, whichever door named it. */
const idOf = (item: { chatId?: string; threadId?: string }) => item.chatId ?? item.threadId!

test.group('A person’s chats and threads', (group) => {
  group.each.timeout(60_000)

  test('newest first across pages, no duplicate or missing, only their own, the same on both transports and doors', async ({
    assert,
    cleanup,
  }) => {
    const ctx = await setup()
    cleanup(ctx.close)
    await ctx.say('alice', 'c0', 'What is   the\nweather?')
    await ctx.say('alice', 'c1', 'name:Quarterly numbers')
    await ctx.say('alice', 'c2', 'park the report')
    await ctx.say('bob', 'b0', 'bob secret chat')
    await ctx.say('alice', 'c3', 'x'.repeat(200))
    await ctx.thread('alice', 't0', 'A thread through AG-UI')
    await ctx.thread('bob', 'b1', 'bob secret thread')
    await ctx.say('alice', 'c4', 'Fifth')
    // A second turn in the oldest chat: it comes first now; its title stays its first message.
    await ctx.say('alice', 'c0', 'And tomorrow?')

    const expected = ['c0', 'c4', 't0', 'c3', 'c2', 'c1']
    const r = routes(ctx)
    const whole = await list(r.adonisChats.base, r.adonisChats.path, 'alice')
    assert.equal(whole.status, 200)
    assert.equal(whole.headers.get('cache-control'), 'private, no-store')
    assert.isNull(whole.json.next)
    const chats: any[] = whole.json.chats
    assert.deepEqual(chats.map(idOf), expected)
    const byId = Object.fromEntries(chats.map((c) => [c.chatId, c]))
    assert.equal(byId.c0.title, 'What is the weather?')
    assert.equal(byId.c1.title, 'Quarterly numbers')
    assert.equal(byId.c3.title, `${'x'.repeat(79)}…`)
    assert.equal(byId.t0.title, 'A thread through AG-UI')
    assert.equal(byId.c2.status, 'parked')
    for (const id of ['c0', 'c1', 'c3', 'c4', 't0']) assert.equal(byId[id].status, 'finished')
    assert.isBelow(Date.parse(byId.c0.createdAt), Date.parse(byId.c1.createdAt))
    assert.isAbove(Date.parse(byId.c0.updatedAt), Date.parse(byId.c4.updatedAt))
    for (const chat of chats) {
      assert.match(chat.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.isAtMost(Date.parse(chat.createdAt), Date.parse(chat.updatedAt))
    }
    // Nothing of bob's: not his chats, not his words.
    assert.notInclude(whole.text, 'bob')

    // Every route, two at a time and one at a time: the same items, in the same order.
    for (const route of Object.values(r)) {
      for (const limit of [1, 2, 100]) {
        const pages = await allPages(route, 'alice', limit)
        assert.equal(pages.length, Math.max(1, Math.ceil(expected.length / limit)))
        for (const page of pages.slice(0, -1)) assert.lengthOf(page, limit)
        const items = pages.flat()
        assert.deepEqual(
          items.map((item) => ({ ...item, chatId: undefined, threadId: undefined })),
          chats.map((chat) => ({ ...chat, chatId: undefined, threadId: undefined })),
          `${route.path} by ${limit}`
        )
        assert.deepEqual(items.map(idOf), expected, `${route.path} by ${limit}`)
      }
    }
    // The Fetch handlers answer byte for byte as the AdonisJS routes do.
    assert.equal((await list(ctx.fetchUrl, '/ui/chat', 'alice')).text, whole.text)
    assert.deepEqual(
      (await list(ctx.fetchUrl, '/ag/threads', 'alice')).json,
      (await list(ctx.url, '/agui/threads', 'alice')).json
    )

    // bob sees his own, only; someone with none gets an empty page.
    for (const route of Object.values(r)) {
      assert.deepEqual((await allPages(route, 'bob', 1)).flat().map(idOf), ['b1', 'b0'])
      const nobody = await list(route.base, route.path, 'carol')
      assert.deepEqual(nobody.json, { [route.key]: [], next: null })
    }
  })

  test('paging with the cursor is stable while new chats are created', async ({
    assert,
    cleanup,
  }) => {
    const ctx = await setup()
    cleanup(ctx.close)
    for (let i = 0; i < 7; i++) await ctx.say('alice', `s${i}`, `chat ${i}`)
    let round = 0
    for (const route of Object.values(routes(ctx))) {
      round++
      const before = (await allPages(route, 'alice', 100)).flat().map(idOf)
      if (round === 1) assert.deepEqual(before, ['s6', 's5', 's4', 's3', 's2', 's1', 's0'])
      const first = await list(route.base, route.path, 'alice', 'limit=3')
      const seen = first.json[route.key].map(idOf)
      let cursor: string | null = first.json.next
      // A new chat and a new thread while the person pages: they land before the first page.
      const made = [`new-chat-${round}`, `new-thread-${round}`]
      await ctx.say('alice', made[0], 'new')
      await ctx.thread('alice', made[1], 'new thread')
      while (cursor) {
        const page = await list(route.base, route.path, 'alice', `limit=3&cursor=${cursor}`)
        assert.equal(page.status, 200)
        seen.push(...page.json[route.key].map(idOf))
        cursor = page.json.next
      }
      assert.deepEqual(seen, before, route.path)
      // A fresh first page starts with what was created meanwhile.
      const fresh = await list(route.base, route.path, 'alice', 'limit=2')
      assert.deepEqual(fresh.json[route.key].map(idOf), made.reverse())
    }
  })

  test('a bad limit or cursor is 422 naming the rule, no principal is 401, on every route', async ({
    assert,
    cleanup,
  }) => {
    const ctx = await setup()
    cleanup(ctx.close)
    await ctx.say('alice', 'c0', 'hello')
    const forged = Buffer.from(JSON.stringify([1, 'a/b'])).toString('base64url')
    const notJson = Buffer.from('secret-value').toString('base64url')
    const cases: [string, string, string][] = [
      ['limit=0', 'limit', 'range'],
      ['limit=101', 'limit', 'range'],
      ['limit=1.5', 'limit', 'withoutDecimals'],
      ['limit=secret-value', 'limit', 'number'],
      ['limit=1&limit=2', 'limit', 'number'],
      ['cursor=', 'cursor', 'regex'],
      ['cursor=secret%2Fvalue', 'cursor', 'regex'],
      [`cursor=${notJson}`, 'cursor', 'pageKey'],
      [`cursor=${forged}`, 'cursor', 'pageKey'],
    ]
    for (const route of Object.values(routes(ctx))) {
      for (const [query, field, rule] of cases) {
        const answer = await list(route.base, route.path, 'alice', query)
        assert.equal(answer.status, 422, `${route.path}?${query}`)
        assert.deepEqual(Object.keys(answer.json), ['code', 'message'])
        assert.equal(answer.json.code, 'invalid_query')
        assert.include(answer.json.message, `"${field}" fails the "${rule}" rule`)
        assert.notInclude(answer.text, 'secret')
      }
      const anonymous = await list(route.base, route.path, null)
      assert.equal(anonymous.status, 401)
      assert.deepEqual(Object.keys(anonymous.json), ['code', 'message'])
      assert.equal(anonymous.json.code, 'unauthenticated')
      // Unknown parameters change nothing.
      const plain = await list(route.base, route.path, 'alice', 'utm_source=x')
      assert.equal(plain.status, 200)
      assert.deepEqual(plain.json[route.key].map(idOf), ['c0'])
    }
    // The Fetch handlers' other methods on the list's path.
    const put = await fetch(`${ctx.fetchUrl}/ag/threads`, { method: 'PUT' })
    assert.equal(put.status, 405)
  })
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Database } from '@adonisjs/lucid/database'
import type { AgentRunner } from '../src/runner/contract.js'
import { defineConfig } from '../src/define_config.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { createRequestLimits, type LimitsConfig } from '../src/http/limits.js'
import { createDatabase, resetTables, snapshotTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { postJson, readResponse, runInput, serveApp } from './helpers/http.js'
import { cookieClient, serveWebKit } from './helpers/web_kit.js'

/**
 * Per-principal limits (config `limits`, `@adonisjs/limiter`): run starts and open streams on
 * both doors and both transports (the AdonisJS routes, the Fetch handlers on node:http), the
 * native routes, the decisions; a refusal is 429 `{ code, message }` with `Retry-After`, and
 * writes nothing.
 */

/** A runner whose runs write a word, then hold until `open()` (or their signal aborts). */
function heldRunner() {
  let open!: () => void
  const gate = new Promise<void>((resolve) => (open = resolve))
  const runner: AgentRunner = {
    start: async (ctx) => {
      await ctx.writer.write({ t: 'text', v: 'working' })
      await Promise.race([
        gate,
        new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true })),
      ])
      return { status: 'finished' }
    },
    resume: async () => ({ status: 'finished' }),
  }
  return { runner, open }
}

const quick: AgentRunner = {
  start: async (ctx) => {
    await ctx.writer.write({ t: 'text', v: 'done' })
    return { status: 'finished' }
  },
  resume: async () => ({ status: 'finished' }),
}

interface Served {
  url: string
  db: Database
  /** The AdonisJS routes: the native `/runs` routes too. */
  native: boolean
}

type Transport = 'AdonisJS' | 'Fetch'

/** Both doors on `transport` with `limits`, `x-user` the principal, on fresh tables. */
async function serve(
  transport: Transport,
  limits: LimitsConfig,
  runner: AgentRunner,
  cleanup: (fn: () => void | Promise<void>) => void
): Promise<Served> {
  if (transport === 'AdonisJS') {
    const { url, app } = await serveApp({ runner, limits })
    const db = await app.container.make('lucid.db')
    await resetTables(db)
    return { url, db, native: true }
  }
  // One limits object shared by both doors' handlers: the counts are the principal's.
  const shared = await createRequestLimits(limits)
  const served = await serveRuntime({ runner }, (runtime, principal) => {
    const agui = createAgUiFetchHandler(runtime.door, {
      basePath: '/agui',
      principal,
      limits: shared,
    })
    const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal, limits: shared })
    return (request) =>
      new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
  })
  cleanup(served.close)
  return { url: served.url, db: served.db, native: false }
}

const chatBody = (id: string) => ({
  id,
  messages: [{ id: 'u0', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
  trigger: 'submit-message',
})

/** A 429 of `code`: JSON `{ code, message }` naming the rule, `Retry-After` in 1..`most` s. */
async function assertLimited(
  assert: any,
  response: Response,
  code: string,
  rule: string,
  most: number
) {
  const answer = await readResponse(response)
  assert.equal(answer.status, 429, answer.text)
  assert.deepEqual(Object.keys(answer.json), ['code', 'message'])
  assert.equal(answer.json.code, code)
  assert.include(answer.json.message, `limits.${rule}`)
  const retry = Number(answer.headers.get('retry-after'))
  assert.isTrue(Number.isInteger(retry) && retry >= 1 && retry <= most, `Retry-After ${retry}`)
}

/** Read `response` until its text so far includes `text`; `rest()` reads what follows, whole. */
async function readUntil(response: Response, text: string) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  while (!seen.includes(text)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`ended before ${text}: ${seen}`)
    seen += decoder.decode(value, { stream: true })
  }
  return {
    async rest() {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return seen
        seen += decoder.decode(value, { stream: true })
      }
    },
  }
}

/** Ask `send` until it is not refused (429), within a generous bound; the answer. */
async function eventually(send: () => Promise<Response>) {
  for (let attempt = 0; attempt < 200; attempt++) {
    const response = await send()
    if (response.status !== 429) return response
    await response.text()
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error('still refused')
}

for (const transport of ['AdonisJS', 'Fetch'] as const) {
  test.group(`Per-principal limits on the ${transport} transport`, () => {
    test('run starts past limits.runStarts: 429 with Retry-After on both doors, nothing written', async ({
      assert,
      cleanup,
    }) => {
      const { url, db, native } = await serve(
        transport,
        { runStarts: { requests: 2, duration: '1m' }, streams: false },
        quick,
        cleanup
      )
      const agui = (user: string) =>
        postJson(`${url}/agui`, runInput(`t-${randomUUID()}`, randomUUID()), user)
      const chat = (user: string) => postJson(`${url}/chat`, chatBody(`c-${randomUUID()}`), user)
      // Two starts, one on each door: the rule counts the principal's starts on both.
      assert.equal((await readResponse(await agui('alice'))).status, 200)
      assert.equal((await readResponse(await chat('alice'))).status, 200)
      const before = await snapshotTables(db)
      await assertLimited(assert, await agui('alice'), 'too_many_run_starts', 'runStarts', 60)
      await assertLimited(assert, await chat('alice'), 'too_many_run_starts', 'runStarts', 60)
      if (native) {
        const start = await postJson(`${url}/runs`, { message: 'go' }, 'alice')
        await assertLimited(assert, start, 'too_many_run_starts', 'runStarts', 60)
      }
      assert.equal(await snapshotTables(db), before)
      // Someone else's starts are their own (two of them, then the same limit).
      assert.equal((await readResponse(await agui('bob'))).status, 200)
      if (native) {
        assert.equal((await postJson(`${url}/runs`, { message: 'go' }, 'bob')).status, 201)
      } else {
        assert.equal((await readResponse(await chat('bob'))).status, 200)
      }
      await assertLimited(assert, await chat('bob'), 'too_many_run_starts', 'runStarts', 60)
    }).timeout(60_000)

    test('open streams past limits.streams: 429 on every stream route; a slot frees when a stream ends', async ({
      assert,
      cleanup,
    }) => {
      const { runner, open } = heldRunner()
      const { url, db, native } = await serve(
        transport,
        { streams: { concurrent: 2 }, runStarts: false },
        runner,
        cleanup
      )
      cleanup(open)
      const threadId = `t-${randomUUID()}`
      const runId = randomUUID()
      const chatId = `c-${randomUUID()}`
      const first = new AbortController()
      const aguiRun = await fetch(`${url}/agui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'alice' },
        body: JSON.stringify(runInput(threadId, runId)),
        signal: first.signal,
      })
      assert.equal(aguiRun.status, 200)
      const second = new AbortController()
      const chatTurn = await fetch(`${url}/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'alice' },
        body: JSON.stringify(chatBody(chatId)),
        signal: second.signal,
      })
      assert.equal(chatTurn.status, 200)
      // Both runs are under way (nothing more is written until they end).
      await readUntil(aguiRun, 'working')
      const turn = await readUntil(chatTurn, 'working')
      // Both of alice's slots are held: every other stream of hers is refused, a start too,
      // and nothing is written.
      const before = await snapshotTables(db)
      const get = (path: string, user = 'alice') =>
        fetch(`${url}${path}`, { headers: { 'x-user': user } })
      const limited = (response: Response) =>
        assertLimited(assert, response, 'too_many_streams', 'streams', 5)
      await limited(await get(`/agui/runs/${runId}`))
      await limited(await get(`/agui/threads/${threadId}`))
      await limited(await get(`/chat/${chatId}/stream`))
      if (native) await limited(await get(`/runs/${runId}/stream`))
      await limited(await postJson(`${url}/agui`, runInput(`t-${randomUUID()}`, randomUUID())))
      await limited(await postJson(`${url}/chat`, chatBody(`c-${randomUUID()}`)))
      assert.equal(await snapshotTables(db), before)
      // A list is no stream; someone else's streams are their own.
      assert.equal((await get('/agui/threads')).status, 200)
      const bob = new AbortController()
      const bobs = await fetch(`${url}/agui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'bob' },
        body: JSON.stringify(runInput(`t-${randomUUID()}`, randomUUID())),
        signal: bob.signal,
      })
      assert.equal(bobs.status, 200)
      bob.abort()

      // Alice's first client goes away: its slot is given back, a re-attach gets in.
      first.abort()
      const back = new AbortController()
      const reattach = await eventually(() =>
        fetch(`${url}/agui/runs/${runId}`, { headers: { 'x-user': 'alice' }, signal: back.signal })
      )
      assert.equal(reattach.status, 200)
      await limited(await get(`/chat/${chatId}/stream`))
      // The runs end: every stream ends and gives its slot back.
      open()
      assert.include(await reattach.text(), 'RUN_FINISHED')
      assert.include(await turn.rest(), '[DONE]')
      const again = await eventually(() => get(`/chat/${chatId}/stream`))
      assert.oneOf(again.status, [200, 204])
      await again.text()
      if (native) {
        const frames = await eventually(() => get(`/runs/${runId}/stream`))
        assert.equal(frames.status, 200)
        await frames.text()
      }
    }).timeout(60_000)

    test('no limits configured: nothing is refused (the default)', async ({ assert, cleanup }) => {
      const { url } = await serve(transport, { runStarts: false, streams: false }, quick, cleanup)
      for (let index = 0; index < 5; index++) {
        const answer = await readResponse(
          await postJson(`${url}/agui`, runInput(`t-${randomUUID()}`, randomUUID()))
        )
        assert.equal(answer.status, 200)
      }
    }).timeout(60_000)
  })
}

test.group('Per-principal limits in an AdonisJS web app (session auth, shield)', () => {
  test('run starts and decisions past their limits: 429 JSON with Retry-After', async ({
    assert,
  }) => {
    const { url, app } = await serveWebKit({
      runner: quick,
      limits: { runStarts: { requests: 1, duration: '1m' }, decisions: { requests: 1 } },
    })
    const db = await app.container.make('lucid.db')
    const alice = cookieClient(url)
    await alice.signIn('alice@example.com')
    const token = await alice.pageToken('/chat')
    const post = (path: string, body: unknown) =>
      alice.fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': token },
        body: JSON.stringify(body),
      })
    const started = await readResponse(
      await post('/agent/agui', runInput(`t-${randomUUID()}`, randomUUID()))
    )
    assert.equal(started.status, 200)
    const before = await snapshotTables(db)
    const again = await post('/agent/agui', runInput(`t-${randomUUID()}`, randomUUID()))
    await assertLimited(assert, again, 'too_many_run_starts', 'runStarts', 60)
    const turn = await post('/agent/chat', chatBody(`c-${randomUUID()}`))
    await assertLimited(assert, turn, 'too_many_run_starts', 'runStarts', 60)
    // A decision on no item: 404 first, then the limit.
    assert.equal((await post('/agent/items/r1/i1/approve', {})).status, 404)
    const decided = await post('/agent/items/r1/i1/approve', {})
    await assertLimited(assert, decided, 'too_many_decisions', 'decisions', 60)
    assert.equal(await snapshotTables(db), before)
  }).timeout(60_000)
})

/** A replica of the app in a process of its own (`tests/fixtures/limited_app.ts`): its URL. */
async function replica(limits: LimitsConfig, env: Record<string, string>, cleanup: any) {
  const child = fork(fileURLToPath(new URL('fixtures/limited_app.ts', import.meta.url)), [], {
    execArgv: ['--import=@poppinss/ts-exec'],
    env: { ...process.env, ...env, LIMITS: JSON.stringify(limits) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  cleanup(() => void child.kill('SIGKILL'))
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { url: string }))
    child.once('exit', (code) => reject(new Error(`the replica exited early (${code})`)))
  })
  return url
}

test.group('Per-principal limits across replicas', () => {
  test("the app's limiter with a shared store (database): one count for the fleet", async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    const table = 'agent_stream_test_limits'
    // The table `@adonisjs/limiter`'s database store counts in (rate-limiter-flexible's shape).
    await db.connection().schema.dropTableIfExists(table)
    await db.connection().schema.createTable(table, (t) => {
      t.string('key', 255).notNullable().primary()
      t.integer('points').notNullable().defaultTo(0)
      t.bigint('expire').unsigned()
    })
    await db.manager.closeAll()
    const limits = { runStarts: { requests: 2, duration: '1m' }, streams: false } as const
    const env = { LIMITER_TABLE: table }
    const [a, b] = await Promise.all([replica(limits, env, cleanup), replica(limits, env, cleanup)])
    const start = (base: string, user = 'alice') =>
      postJson(`${base}/agui`, runInput(`t-${randomUUID()}`, randomUUID()), user)
    assert.equal((await readResponse(await start(a))).status, 200)
    assert.equal((await readResponse(await start(b))).status, 200)
    // Alice's third start, on either replica: the fleet's count says no.
    await assertLimited(assert, await start(a), 'too_many_run_starts', 'runStarts', 60)
    await assertLimited(assert, await start(b), 'too_many_run_starts', 'runStarts', 60)
    assert.equal((await readResponse(await start(b, 'bob'))).status, 200)
  }).timeout(120_000)

  test('without an app limiter: counted in each replica’s memory (a replica’s limit, not the fleet’s)', async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    await db.manager.closeAll()
    const limits = { runStarts: { requests: 1, duration: '1m' }, streams: false } as const
    const [a, b] = await Promise.all([replica(limits, {}, cleanup), replica(limits, {}, cleanup)])
    const start = (base: string) =>
      postJson(`${base}/agui`, runInput(`t-${randomUUID()}`, randomUUID()), 'alice')
    assert.equal((await readResponse(await start(a))).status, 200)
    await assertLimited(assert, await start(a), 'too_many_run_starts', 'runStarts', 60)
    // The other replica has counted nothing of alice's.
    assert.equal((await readResponse(await start(b))).status, 200)
  }).timeout(120_000)
})

test.group('Per-principal limits: config and faults', () => {
  test('a bad rule is refused at config time, naming the field', ({ assert }) => {
    for (const [limits, field] of [
      [{ runStarts: { requests: 0 } }, 'limits.runStarts.requests'],
      [{ decisions: { requests: 1.5 } }, 'limits.decisions.requests'],
      [{ runStarts: { duration: '10ms' } }, 'limits.runStarts.duration'],
      [{ streams: { concurrent: -1 } }, 'limits.streams.concurrent'],
      [{ streams: { window: 'soon' } }, 'limits.streams.window'],
      [{ store: '' }, 'limits.store'],
    ] as const) {
      assert.throws(() => defineConfig({ limits: limits as LimitsConfig }), new RegExp(field))
    }
  })

  test("the limiter's store failing admits the request and is told once", async ({
    assert,
    cleanup,
  }) => {
    const { LimiterManager } = await import('@adonisjs/limiter')
    const { default: LimiterDatabaseStore } = await import('@adonisjs/limiter/stores/database')
    const told: unknown[] = []
    const served = await serveRuntime({ runner: quick }, (runtime, principal) => {
      // A store whose table is missing: every count fails with the driver's error.
      const limiter = new LimiterManager({
        default: 'db',
        stores: {
          db: (options) =>
            new LimiterDatabaseStore(sinkInternals(runtime.sink).client, {
              tableName: 'agent_stream_no_such_table',
              ...options,
            }),
        },
      })
      const pending = createRequestLimits(
        { runStarts: { requests: 1 }, streams: { concurrent: 1 } },
        { limiter, onError: (error) => void told.push(error) }
      )
      const handler = pending.then((limits) =>
        createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal, limits })
      )
      return async (request) => (await handler)(request)
    })
    cleanup(served.close)
    for (let index = 0; index < 3; index++) {
      const answer = await readResponse(
        await postJson(`${served.url}/agui`, runInput(`t-${randomUUID()}`, randomUUID()))
      )
      assert.equal(answer.status, 200)
    }
    assert.lengthOf(told, 1)
  }).timeout(60_000)
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { HttpAgent, buildResumeArray } from '@ag-ui/client'
import { scriptedAgent, type ScriptedAgentOptions } from '../src/testing/scripted_agent.js'
import { createRuntime } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { MAX_JSON_DEPTH, tooDeep } from '../src/core/json_depth.js'
import { tableNames } from '../src/store/schema.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { readResponse, serveApp } from './helpers/http.js'
import { assertConforms, parseSse, recordingFetch, type WireEvent } from './helpers/agui.js'

/** `{"a":{"a":...1...}}` nested `levels` deep, as JSON text (no recursion, any depth). */
const deepJson = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`

type Db = Awaited<ReturnType<typeof createDatabase>>

/** Every row of every package table, to prove a refusal changed nothing. */
async function snapshot(db: Db) {
  const out: Record<string, unknown[]> = {}
  for (const table of Object.values(tableNames())) {
    out[table] = await db.connection().from(table).select('*').orderByRaw('1, 2')
  }
  return JSON.stringify(out)
}

async function setup(options: ScriptedAgentOptions = { steps: ['approval', 'question'] }) {
  const served = await serveApp({ runner: scriptedAgent(options) })
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  /** POST `body` (a string, sent as is) with `type` as its Content-Type (none when null). */
  const send = async (path: string, body: string | FormData, type: string | null) => {
    const headers: Record<string, string> = { 'x-user': 'alice' }
    if (type !== null) headers['content-type'] = type
    return readResponse(await fetch(`${served.url}${path}`, { method: 'POST', headers, body }))
  }
  const post = (path: string, body: unknown) => send(path, JSON.stringify(body), 'application/json')
  /** A thread parked on its approval (AG-UI): its id, interrupt and parked item. */
  const park = async () => {
    const threadId = `t-${randomUUID()}`
    const started = await post('/agui', input(threadId))
    const interrupt = parseSse(started.text).at(-1)!.event.outcome.interrupts[0] as WireEvent
    await served.agentStream.driver.settled()
    const [item] = await served.agentStream.parking.queries.list({ threadId })
    return { threadId, interrupt, item, path: `/items/${item.runId}/${item.itemId}` }
  }
  return { ...served, db, send, post, park, snapshot: () => snapshot(db) }
}

const input = (threadId: string, extra: Record<string, unknown> = {}) => ({
  threadId,
  runId: randomUUID(),
  messages: [{ id: 'u1', role: 'user', content: 'go' }],
  ...extra,
})

/** Approve the parked approval so the run goes on and parks on its question set. */
async function toQuestion(ctx: Awaited<ReturnType<typeof setup>>) {
  const parked = await ctx.park()
  await ctx.post(`${parked.path}/approve`, {})
  await ctx.agentStream.driver.settled()
  const [question] = await ctx.agentStream.parking.queries.list({ threadId: parked.threadId })
  if (question?.kind !== 'elicitation') throw new Error('no question set')
  return {
    threadId: parked.threadId,
    question,
    path: `/items/${question.runId}/${question.itemId}`,
  }
}

test.group('Item 7: a resume is checked against the schema its interrupt advertised', () => {
  test('AG-UI: an extra field, a value outside the enum: RUN_ERROR invalid_resume_payload, no row changed', async ({
    assert,
  }) => {
    const ctx = await setup()
    const { threadId, interrupt } = await ctx.park()
    const before = await ctx.snapshot()
    // Through the official client: buildResumeArray with a payload the schema does not allow.
    const recorder = recordingFetch()
    const client = new HttpAgent({
      url: `${ctx.url}/agui`,
      threadId,
      headers: { 'x-user': 'alice' },
      fetch: recorder.fetch,
      initialMessages: [{ id: 'u1', role: 'user', content: 'go' }],
    })
    const pending = [{ ...interrupt, id: interrupt.id }] as any
    await client
      .runAgent({
        resume: buildResumeArray(pending, {
          [interrupt.id]: { status: 'resolved', payload: { approved: true, extra: 'x' } },
        }),
      })
      .catch(() => {})
    const events = recorder.events()
    assert.deepEqual(
      events.map((e) => [e.type, e.code]),
      [['RUN_ERROR', 'invalid_resume_payload']]
    )
    await assertConforms(assert, events)
    await ctx.agentStream.driver.settled()
    assert.equal(await ctx.snapshot(), before)

    // A question set: a value outside a question's enum (no free text).
    const second = await toQuestion(ctx)
    const open = await fetch(`${ctx.url}/agui/threads/${second.threadId}`, {
      headers: { 'x-user': 'alice' },
    })
    const asked = parseSse(await open.text()).at(-1)!.event.outcome.interrupts[0] as WireEvent
    assert.deepEqual(asked.responseSchema.properties.answers.properties.format.items.enum, [
      'pdf',
      'csv',
    ])
    const beforeAnswer = await ctx.snapshot()
    for (const payload of [
      { answers: { format: ['gif'] } },
      { answers: { format: ['pdf', 'csv'] } },
      { answers: { format: ['pdf'] }, extra: 1 },
    ]) {
      const refused = await ctx.post(
        '/agui',
        input(second.threadId, {
          resume: [{ interruptId: asked.id, status: 'resolved', payload }],
        })
      )
      const got = parseSse(refused.text).map((e) => e.event)
      assert.deepEqual(
        got.map((e) => [e.type, e.code]),
        [['RUN_ERROR', 'invalid_resume_payload']]
      )
      await ctx.agentStream.driver.settled()
      assert.equal(await ctx.snapshot(), beforeAnswer, JSON.stringify(payload))
    }
  })

  test('JSON decision routes: an unknown field, a value outside the options: 422 naming the rule, no row changed', async ({
    assert,
  }) => {
    const ctx = await setup()
    const { path } = await ctx.park()
    const before = await ctx.snapshot()
    for (const [action, body, rule] of [
      ['approve', { approved: true, extra: 'x' }, 'knownField'],
      ['approve', { reason: 'fine', extra: 'x' }, 'knownField'],
      ['reject', { reason: 'no', extra: 'x' }, 'knownField'],
    ] as const) {
      const refused = await ctx.post(`${path}/${action}`, body)
      assert.equal(refused.status, 422, `${action} ${JSON.stringify(body)}`)
      assert.equal(refused.json.code, 'E_INVALID_DECISION')
      assert.include(refused.json.message, `"${rule}" rule`)
      assert.notInclude(refused.text, 'extra')
    }
    assert.equal(await ctx.snapshot(), before)

    const { path: questionPath } = await toQuestion(ctx)
    const beforeAnswer = await ctx.snapshot()
    for (const [answers, rule] of [
      [{ format: ['gif'] }, 'option'],
      [{ format: ['pdf', 'csv'] }, 'single'],
    ] as const) {
      const refused = await ctx.post(`${questionPath}/answer`, { answers })
      assert.equal(refused.status, 422)
      assert.equal(refused.json.code, 'E_INVALID_DECISION')
      assert.include(refused.json.message, `"${rule}" rule`)
      assert.notInclude(refused.text, 'gif')
    }
    const extra = await ctx.post(`${questionPath}/answer`, { answers: {}, extra: 'x' })
    assert.equal(extra.status, 422)
    assert.include(extra.json.message, '"knownField" rule')
    assert.equal(await ctx.snapshot(), beforeAnswer)
    // Free text where the question allows it is an answer, not a refusal.
    const ok = await ctx.post(`${questionPath}/answer`, {
      answers: { format: ['csv'], note: ['anything'] },
    })
    assert.deepEqual(ok.json, { status: 'answered' })
  })
})

test.group('Item 8: nesting is capped on every route that takes JSON', () => {
  test('the depth rule: 64 levels pass, 65 do not; iterative, cycles end', ({ assert }) => {
    let value: unknown = 1
    for (let i = 0; i < MAX_JSON_DEPTH; i++) value = [value]
    assert.isFalse(tooDeep(value))
    assert.isTrue(tooDeep({ a: value }))
    assert.isTrue(tooDeep(JSON.parse(deepJson(200_000))))
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    cyclic.again = cyclic
    assert.isTrue(tooDeep(cyclic))
    const shared = { leaf: [1] }
    assert.isFalse(tooDeep({ a: shared, b: shared, c: [shared, shared] }))
  })

  for (const levels of [100, 2000]) {
    test(`a body nested ${levels} levels: 4xx naming maxDepth, no row changed, on each route`, async ({
      assert,
    }) => {
      const ctx = await setup()
      const parked = await ctx.park()
      const { question } = await toQuestion(ctx)
      const other = await ctx.park()
      const deep = deepJson(levels)
      const resume = (id: string, thread: string) =>
        JSON.stringify(
          input(thread, { resume: [{ interruptId: id, status: 'resolved' }] })
        ).replace(/"status":"resolved"/, `"status":"resolved","payload":${deep}`)
      const cases: [string, string, number, string][] = [
        ['/agui', resume(other.interrupt.id, other.threadId), 400, 'invalid_input'],
        [
          '/agui',
          JSON.stringify(input(`t-${randomUUID()}`)).replace(/}$/, `,"forwardedProps":${deep}}`),
          400,
          'invalid_input',
        ],
        ['/runs', `{"message":"go","metadata":${deep}}`, 422, 'invalid_input'],
        [`${other.path}/approve`, `{"input":${deep}}`, 422, 'E_INVALID_DECISION'],
        [`${other.path}/reject`, `{"reason":${deep}}`, 422, 'E_INVALID_DECISION'],
        [
          `/items/${question.runId}/${question.itemId}/answer`,
          `{"answers":{"format":${deep}}}`,
          422,
          'E_INVALID_DECISION',
        ],
        [`/runs/${parked.item.streamRunId}/cancel`, `{"why":${deep}}`, 422, 'E_INVALID_STOP'],
      ]
      const before = await ctx.snapshot()
      for (const [path, body, status, code] of cases) {
        const refused = await ctx.send(path, body, 'application/json')
        assert.equal(refused.status, status, `${path}: ${refused.text.slice(0, 200)}`)
        assert.equal(refused.json?.code, code, path)
        assert.include(refused.json.message, '"maxDepth" rule', path)
      }
      await ctx.agentStream.driver.settled()
      assert.equal(await ctx.snapshot(), before)
    })
  }

  test('a fresh process: its first deep bodies are refused by the rule, never a 500 in AdonisJS', async ({
    assert,
    cleanup,
  }) => {
    // AdonisJS deep-clones a parsed body (`Request.setInitialBody`) with a recursive clone that
    // is not yet optimized in a fresh process: 2,000 levels exhaust the stack there, before any
    // route code runs. The body guard keeps such a body from being cloned.
    const db = createDatabase()
    await resetTables(db)
    await db.manager.closeAll()
    const child = fork(fileURLToPath(new URL('fixtures/http_app.ts', import.meta.url)), [], {
      execArgv: ['--import=@poppinss/ts-exec'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    cleanup(() => void child.kill('SIGKILL'))
    const { url } = await new Promise<{ url: string }>((resolve, reject) => {
      child.once('message', (message) => resolve(message as { url: string }))
      child.once('exit', (code) => reject(new Error(`the app exited early (${code})`)))
    })
    const deep = deepJson(2000)
    for (const [path, body, status] of [
      ['/runs', `{"message":"go","m":${deep}}`, 422],
      ['/items/r1/c1/approve', `{"input":${deep}}`, 422],
      ['/agui', JSON.stringify(input('t1')).replace(/}$/, `,"state":${deep}}`), 400],
    ] as const) {
      const response = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user': 'alice' },
        body,
      })
      const text = await response.text()
      assert.equal(response.status, status, `${path}: ${text.slice(0, 200)}`)
      assert.include(JSON.parse(text).message, '"maxDepth" rule')
    }
  })

  test('the admin form: a too-deep body with a valid token is refused (422), no row changed', async ({
    assert,
  }) => {
    const ctx = await setup()
    const { item } = await ctx.park()
    const page = await fetch(`${ctx.url}/admin/items/${item.runId}/${item.itemId}`, {
      headers: { 'x-admin': 'yes', 'x-user': 'alice' },
    })
    const cookie = page.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .find((c) => c.startsWith('agent_stream_csrf='))!
    const csrf = /name="agent_stream_csrf" value="([^"]+)"/.exec(await page.text())![1]
    const before = await ctx.snapshot()
    for (const levels of [100, 2000]) {
      const response = await fetch(`${ctx.url}/admin/items/${item.runId}/${item.itemId}/approve`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'x-admin': 'yes',
          'x-user': 'alice',
          'cookie': cookie,
          'content-type': 'application/json',
        },
        body: `{"agent_stream_csrf":${JSON.stringify(csrf)},"park":${item.park},"x":${deepJson(levels)}}`,
      })
      assert.equal(response.status, 422)
      assert.include(await response.text(), 'maxDepth')
    }
    assert.equal(await ctx.snapshot(), before)
  })

  test('the Fetch handler: a deep resume payload is 400 invalid_input naming maxDepth', async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    const runtime = createRuntime(db, { runner: scriptedAgent({ steps: ['approval'] }) })
    cleanup(async () => {
      await runtime.driver.settled()
      await runtime.sink.shutdown()
      await db.manager.closeAll()
    })
    const handle = createAgUiFetchHandler(runtime.door, { basePath: '/agui' })
    const post = (body: string) =>
      handle(
        new Request('http://x/agui', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
      )
    const threadId = `t-${randomUUID()}`
    const first = parseSse(await (await post(JSON.stringify(input(threadId)))).text())
    const interrupt = first.at(-1)!.event.outcome.interrupts[0]
    await runtime.driver.settled()
    const before = await snapshot(db)
    for (const levels of [100, 2000, 100_000]) {
      const body = JSON.stringify(
        input(threadId, { resume: [{ interruptId: interrupt.id, status: 'resolved' }] })
      ).replace(/"status":"resolved"/, `"status":"resolved","payload":${deepJson(levels)}`)
      const refused = await post(body)
      assert.equal(refused.status, 400)
      const json = (await refused.json()) as { code: string; message: string }
      assert.equal(json.code, 'invalid_input')
      assert.include(json.message, '"maxDepth" rule')
    }
    assert.equal(await snapshot(db), before)
  })
})

test.group('Item 9: every JSON route takes application/json only', () => {
  test('text/plain, a form, multipart or no type: 415 unsupported_media_type, nothing decided', async ({
    assert,
  }) => {
    const ctx = await setup()
    const { path, threadId, interrupt, item } = await ctx.park()
    const { path: questionPath } = await toQuestion(ctx)
    const resume = JSON.stringify(
      input(threadId, {
        resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } }],
      })
    )
    const routes: [string, string][] = [
      ['/agui', JSON.stringify(input(`t-${randomUUID()}`))],
      ['/agui', resume],
      ['/runs', JSON.stringify({ message: 'go' })],
      [`${path}/approve`, '{}'],
      [`${path}/reject`, '{}'],
      [`${questionPath}/answer`, JSON.stringify({ answers: { format: ['csv'] } })],
      [`/runs/${item.streamRunId}/cancel`, '{}'],
    ]
    const before = await ctx.snapshot()
    for (const [route, json] of routes) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'text/html', null]) {
        const refused = await ctx.send(route, json, type)
        assert.equal(refused.status, 415, `${route} as ${type}`)
        assert.deepEqual(refused.json, {
          code: 'unsupported_media_type',
          message: 'The body must be application/json',
        })
      }
      const form = new FormData()
      form.set('approved', 'true')
      const multipart = await ctx.send(route, form, null)
      assert.equal(multipart.status, 415, `${route} as multipart`)
    }
    await ctx.agentStream.driver.settled()
    assert.equal(await ctx.snapshot(), before)
    // JSON with parameters, or a +json type, is JSON.
    const ok = await ctx.send(`${path}/approve`, '{}', 'application/json; charset=utf-8')
    assert.deepEqual(ok.json, { status: 'approved' })
    const started = await ctx.send('/runs', '{"message":"go"}', 'application/vnd.api+json')
    assert.equal(started.status, 201)
  })
})

import { test } from '@japa/runner'
import { getActiveTest } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { AgentRunner } from '../src/runner/contract.js'
import { createRuntime } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { createDatabase, resetTables } from './helpers/db.js'
import { postJson, runInput, serveApp } from './helpers/http.js'
import { assertConforms, parseSse } from './helpers/agui.js'

/** A run that writes, waits for `release()`, writes again and finishes. */
function gated() {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const runner: AgentRunner = {
    async start(ctx) {
      await ctx.writer.write({ t: 'text', v: 'One. ' })
      await ctx.writer.flush?.()
      await gate
      await ctx.writer.write({ t: 'text', v: 'Two.' })
      return { status: 'finished' }
    },
    async resume() {
      return { status: 'finished' }
    },
  }
  return { runner, release }
}

const get = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { headers: { 'x-user': 'alice', ...headers } })

/** The status and `code` of a response; its body is let go (a stream that never ends too). */
async function refusalOf(response: Response) {
  if (response.status === 200) {
    await response.body?.cancel()
    return { status: 200, code: null }
  }
  return { status: response.status, code: ((await response.json()) as any).code }
}

/** Read an SSE response until its text includes `marker`; the rest keeps coming in `done`. */
async function readUntil(response: Response, marker: string) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let body = ''
  while (!body.includes(marker)) {
    const chunk = await reader.read()
    if (chunk.done) throw new Error(`ended before ${marker}: ${body}`)
    body += decoder.decode(chunk.value, { stream: true })
  }
  const done = (async () => {
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      body += decoder.decode(chunk.value, { stream: true })
    return body
  })()
  return { body: () => body, done }
}

test.group('Cursors past the stored head: both doors refuse them, live or ended', () => {
  test('?after=50 on a run that ends near seq 3: 400 invalid_cursor on every route', async ({
    assert,
  }) => {
    const { runner, release } = gated()
    const served = await serveApp({ runner })
    await resetTables(await served.app.container.make('lucid.db'))
    const runId = randomUUID()
    const threadId = `t-${randomUUID()}`
    const posted = await readUntil(
      await postJson(`${served.url}/agui`, runInput(threadId, runId)),
      'TEXT_MESSAGE_CONTENT'
    )
    const routes = [
      `/agui/runs/${runId}?after=50`,
      `/agui/runs/${runId}?after=50:1`,
      `/agui/threads/${threadId}?after=50`,
      `/runs/${runId}/stream?after=50`,
    ]
    // Inside the last text row, beyond the text stored so far (the row grows while it is last).
    // Its seq is the one the text so far was sent under (the person's message is seq 1).
    const textId = parseSse(posted.body()).findLast(
      (e) => e.event.type === 'TEXT_MESSAGE_CONTENT'
    )!.id!
    const textSeq = Number.parseInt(textId, 10)
    const insideHead = [
      `/agui/runs/${runId}?after=${textSeq}.999`,
      `/runs/${runId}/stream?after=${textSeq}.999`,
    ]
    try {
      // While the run writes (it would otherwise wait for seq 50 forever).
      for (const route of [...routes, ...insideHead]) {
        const answer = await refusalOf(
          await get(`${served.url}${route}`, { accept: 'text/event-stream' })
        )
        assert.deepEqual(answer, { status: 400, code: 'invalid_cursor' }, `live: ${route}`)
      }
      // By header too.
      const byHeader = await refusalOf(
        await get(`${served.url}/runs/${runId}/stream`, { 'last-event-id': '50' })
      )
      assert.deepEqual(byHeader, { status: 400, code: 'invalid_cursor' })

      // A cursor AT the head while the run writes: both doors end when the run ends.
      const lastId = parseSse(posted.body()).findLast((e) => e.id)!.id!
      const agui = await readUntil(
        await get(`${served.url}/agui/runs/${runId}?after=${lastId}`),
        'RUN_STARTED'
      )
      // Nothing after the head yet: its headers came, no frame.
      const native = await readUntil(
        await get(`${served.url}/runs/${runId}/stream?after=${lastId}`),
        ''
      )
      release()
      const aguiEvents = parseSse(await agui.done).map((e) => e.event)
      await assertConforms(assert, aguiEvents)
      assert.equal(aguiEvents.at(-1)!.type, 'RUN_FINISHED')
      assert.include(await native.done, 'Two.')
    } finally {
      release()
    }
    await posted.done
    await served.agentStream.driver.settled()

    // Ended (head near seq 3): the same answer.
    for (const route of routes) {
      const answer = await refusalOf(await get(`${served.url}${route}`))
      assert.deepEqual(answer, { status: 400, code: 'invalid_cursor' }, `ended: ${route}`)
    }
  }).timeout(30_000)
})

test.group('One cursor rule: a non-empty ?after= wins, else a non-empty Last-Event-ID', () => {
  test('an empty ?after= and a Last-Event-ID resume from the header on every route', async ({
    assert,
  }) => {
    const served = await serveApp({ runner: scriptedAgent({ steps: ['reasoning', 'read'] }) })
    await resetTables(await served.app.container.make('lucid.db'))
    const runId = randomUUID()
    const threadId = `t-${randomUUID()}`
    const posted = parseSse(
      await (await postJson(`${served.url}/agui`, runInput(threadId, runId))).text()
    )
    await served.agentStream.driver.settled()
    const native = parseSse(await (await get(`${served.url}/runs/${runId}/stream`)).text())
    const nativeAt = native[Math.floor(native.length / 2)].id!
    const aguiAt = posted[Math.floor(posted.length / 2)].id!
    for (const [route, at] of [
      [`/runs/${runId}/stream`, nativeAt],
      [`/agui/runs/${runId}`, aguiAt],
      [`/agui/threads/${threadId}`, aguiAt],
    ]) {
      const byHeader = await (
        await get(`${served.url}${route}?after=`, { 'last-event-id': at })
      ).text()
      const byQuery = await (await get(`${served.url}${route}?after=${at}`)).text()
      const fromStart = await (await get(`${served.url}${route}`)).text()
      assert.equal(byHeader, byQuery, route)
      assert.notEqual(byHeader, fromStart, route)
      // And a non-empty query wins over the header.
      const both = await (
        await get(`${served.url}${route}?after=${at}`, { 'last-event-id': '1' })
      ).text()
      assert.equal(both, byQuery, route)
    }
  })

  test('the Fetch handler: an empty ?after= and a Last-Event-ID resume from the header', async ({
    assert,
  }) => {
    const db = createDatabase()
    await resetTables(db)
    const runtime = createRuntime(db, { runner: scriptedAgent({ steps: ['reasoning', 'read'] }) })
    getActiveTest()?.cleanup(async () => {
      await runtime.driver.settled()
      await runtime.sink.shutdown()
      await db.manager.closeAll()
    })
    const handle = createAgUiFetchHandler(runtime.door, { basePath: '/agui' })
    const runId = randomUUID()
    const threadId = `t-${randomUUID()}`
    const posted = parseSse(
      await (
        await handle(
          new Request('http://app/agui', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(runInput(threadId, runId)),
          })
        )
      ).text()
    )
    await runtime.driver.settled()
    const at = posted[Math.floor(posted.length / 2)].id!
    const read = async (path: string, headers: Record<string, string> = {}) =>
      (await handle(new Request(`http://app/agui${path}`, { headers }))).text()
    for (const path of [`/runs/${runId}`, `/threads/${threadId}`]) {
      const byHeader = await read(`${path}?after=`, { 'last-event-id': at })
      assert.equal(byHeader, await read(`${path}?after=${at}`), path)
      assert.notEqual(byHeader, await read(path), path)
    }
    // A cursor past the head: refused here too.
    const past = await handle(new Request(`http://app/agui/runs/${runId}?after=50`))
    assert.equal(past.status, 400)
    assert.equal(((await past.json()) as any).code, 'invalid_cursor')
  })
})

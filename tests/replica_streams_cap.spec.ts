import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { Database } from '@adonisjs/lucid/database'
import type { AgentRunner } from '../src/runner/contract.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import { createRequestLimits, type LimitsConfig } from '../src/http/limits.js'
import { resetTables, snapshotTables } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { readResponse, runInput, serveApp } from './helpers/http.js'

/**
 * The replica's cap on streamed responses (config `limits.replicaStreams`, issue 26): past it a
 * stream route answers 503 `{ code: 'too_many_viewers', message }` with `Retry-After` (every
 * principal together: the replica is full), writes nothing, and a slot frees when a stream ends.
 */

/** Runs that write a word, then hold until their client goes away. */
const held: AgentRunner = {
  start: async (ctx) => {
    await ctx.writer.write({ t: 'text', v: 'working' })
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }))
    return { status: 'finished' }
  },
  resume: async () => ({ status: 'finished' }),
}

/** Only the cap: the per-principal rules off. */
const CAP: LimitsConfig = { replicaStreams: 2, runStarts: false, streams: false, decisions: false }

async function serve(transport: 'AdonisJS' | 'Fetch', cleanup: (fn: () => any) => void) {
  if (transport === 'AdonisJS') {
    const { url, app } = await serveApp({
      runner: held,
      limits: CAP,
      agui: { abortOnDisconnect: true },
    } as any)
    const db: Database = await app.container.make('lucid.db')
    await resetTables(db)
    return { url, db }
  }
  const limits = await createRequestLimits(CAP)
  const served = await serveRuntime({ runner: held }, (runtime, principal) => {
    const agui = createAgUiFetchHandler(runtime.door, {
      basePath: '/agui',
      principal,
      limits,
      abortOnDisconnect: true,
    } as any)
    const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal, limits })
    return (request) =>
      new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
  })
  cleanup(served.close)
  return { url: served.url, db: served.db }
}

/** Read `response` until its text includes `text` (its reader kept: the stream stays open). */
async function readUntil(response: Response, text: string) {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  while (!seen.includes(text)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`ended before ${text}: ${seen}`)
    seen += decoder.decode(value, { stream: true })
  }
  return reader
}

for (const transport of ['AdonisJS', 'Fetch'] as const) {
  test.group(`The replica's stream cap on the ${transport} transport`, () => {
    test('past limits.replicaStreams: 503 too_many_viewers with Retry-After, nothing written; a slot frees when a stream ends', async ({
      assert,
      cleanup,
    }) => {
      const { url, db } = await serve(transport, cleanup)
      const start = (user: string, signal?: AbortSignal) =>
        fetch(`${url}/agui`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user': user },
          body: JSON.stringify(runInput(`t-${randomUUID()}`, randomUUID())),
          signal,
        })
      // Two principals hold the replica's two slots (the cap counts everyone together).
      const alice = new AbortController()
      const aliceRun = await start('alice', alice.signal)
      assert.equal(aliceRun.status, 200)
      await readUntil(aliceRun, 'working')
      const bobRun = await start('bob')
      assert.equal(bobRun.status, 200)
      const bob = await readUntil(bobRun, 'working')
      const before = await snapshotTables(db)
      for (const refused of [
        await start('carol'),
        await fetch(`${url}/agui/runs/${randomUUID()}`, { headers: { 'x-user': 'carol' } }),
      ]) {
        const answer = await readResponse(refused)
        assert.equal(answer.status, 503, answer.text)
        assert.deepEqual(Object.keys(answer.json), ['code', 'message'])
        assert.equal(answer.json.code, 'too_many_viewers')
        assert.include(answer.json.message, 'limits.replicaStreams')
        const retry = Number(answer.headers.get('retry-after'))
        assert.isTrue(Number.isInteger(retry) && retry >= 1, `Retry-After ${retry}`)
      }
      assert.deepEqual(await snapshotTables(db), before)
      // Alice goes away: her slot is given back, and carol gets in.
      alice.abort()
      let admitted: Response | null = null
      for (let attempt = 0; attempt < 200 && !admitted; attempt++) {
        const response = await start('carol')
        if (response.status === 200) admitted = response
        else {
          assert.equal(response.status, 503)
          await response.text()
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
      assert.isNotNull(admitted)
      const carol = await readUntil(admitted!, 'working')
      await carol.cancel()
      await bob.cancel()
    }).timeout(60_000)
  })
}

test.group("The replica's stream cap: config", () => {
  test('a bad cap is refused at config time, naming the field', async ({ assert }) => {
    for (const bad of [0, -1, 1.5]) {
      await assert.rejects(
        () => createRequestLimits({ replicaStreams: bad }),
        /limits\.replicaStreams/
      )
    }
  })
})

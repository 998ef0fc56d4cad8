import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Database } from '@adonisjs/lucid/database'
import { createRuntime, type RuntimeOptions } from '../src/runtime.js'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { tableNames } from '../src/store/schema.js'
import { createDatabase, DIALECT, resetTables } from './helpers/db.js'
import { toNode } from './helpers/fetch_node.js'
import { heldRunner } from './helpers/held_runner.js'
import { Replica } from './helpers/replica.js'
import { postJson, runInput } from './helpers/http.js'

/**
 * The busy-thread queue (`multitaskStrategy: 'enqueue'`) is the database's, not a replica's: a
 * queued message survives its replica's restart (a new runtime on the same database starts it),
 * and with two replicas racing to start a thread's next message, each message starts once, in
 * order, one run of the thread at a time.
 */

const tables = tableNames()

/** A replica: its own connection pool, runtime and AG-UI Fetch handler on loopback. */
async function replica(options: RuntimeOptions, fresh = false) {
  const db = createDatabase()
  if (fresh) await resetTables(db)
  const runtime = createRuntime(db, {
    drainMs: 0,
    onError: (e) => process.env.QDEBUG && console.error('onError', e),
    ...options,
  })
  const principal = (request: Request) => {
    const user = request.headers.get('x-user')
    return user ? { id: user } : null
  }
  const handler = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
  const server = createServer(toNode(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await runtime.close()
    await db.manager.closeAll()
  }
  return { db, runtime, url, close }
}

const enqueued = (threadId: string, runId: string, content: string) => ({
  ...runInput(threadId, runId),
  messages: [{ id: `u-${runId}`, role: 'user', content }],
  forwardedProps: { multitaskStrategy: 'enqueue' },
})

/** POST a run and read its stream whole in the background (its text, or the error). */
function post(url: string, body: unknown) {
  return postJson(`${url}/agui`, body)
    .then((response) => response.text())
    .catch((error: unknown) => String(error))
}

async function until(check: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 600; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`never: ${what}`)
}

const queueOf = (db: Database, threadId: string) =>
  db.connection().from(tables.runQueue).where('thread_id', threadId)

const streamEnded = async (db: Database, runId: string) => {
  const row = await db.connection().from(tables.streams).where('run_id', runId).first()
  return row?.status === 'ended'
}

test.group('Busy thread queue across replicas', () => {
  test('a queued message survives its replica: a new runtime on the same database starts it', async ({
    assert,
    cleanup,
  }) => {
    const held = heldRunner()
    const first = await replica({ runner: held.runner }, true)
    cleanup(first.close)
    const threadId = `thread-${randomUUID()}`
    const runA = `run-${randomUUID()}`
    const runB = `run-${randomUUID()}`
    const streamA = post(first.url, {
      ...runInput(threadId, runA),
      messages: [{ id: 'ua', role: 'user', content: 'hold A' }],
    })
    await held.started('hold A')
    const streamB = post(first.url, enqueued(threadId, runB, 'B'))
    await until(async () => (await queueOf(first.db, threadId)).length === 1, 'B queued')
    // The replica goes away while A talks: A ends `replica_shutdown`; B is left queued.
    await first.close()
    await Promise.all([streamA, streamB])
    assert.deepEqual(held.log, ['start:hold A', 'end:hold A'])

    const second = await replica({ runner: held.runner })
    cleanup(second.close)
    const [row] = await queueOf(second.db, threadId)
    assert.equal(row.run_id, runB)
    assert.isNull(await second.db.connection().from(tables.aguiRuns).where('run_id', runB).first())
    const stopSweeper = second.runtime.parking.sweeper.start(50)
    cleanup(stopSweeper)
    await until(() => streamEnded(second.db, runB), 'B ran on the new runtime')
    assert.deepEqual(held.log, ['start:hold A', 'end:hold A', 'start:B', 'end:B'])
    assert.lengthOf(await queueOf(second.db, threadId), 0)
    const runs = await second.db.connection().from(tables.aguiRuns).where('thread_id', threadId)
    assert.sameMembers(
      runs.map((r) => r.run_id),
      [runA, runB]
    )
  })

  test('two replicas (two processes) racing to start the next message: each starts once, in order, one at a time', async ({
    assert,
    cleanup,
  }) => {
    const held = heldRunner()
    const a = await replica({ runner: held.runner, replicaId: 'replica-a' }, true)
    cleanup(a.close)
    cleanup(a.runtime.parking.sweeper.start(20))
    const b = await Replica.start({}, { script: 'queue' })
    const { url: bUrl } = await b.call({ op: 'url' })
    const threadId = `thread-${randomUUID()}`
    const runA = `run-${randomUUID()}`
    const streams = [
      post(a.url, {
        ...runInput(threadId, runA),
        messages: [{ id: 'ua', role: 'user', content: 'hold A' }],
      }),
    ]
    await held.started('hold A')
    const queuedIds: string[] = []
    for (const [i, content] of ['B', 'C', 'D', 'E', 'F', 'G'].entries()) {
      const runId = `run-${randomUUID()}`
      queuedIds.push(runId)
      // Queued through either replica.
      streams.push(post(i % 2 ? bUrl : a.url, enqueued(threadId, runId, content)))
      await until(async () => (await queueOf(a.db, threadId)).length === i + 1, `${content} queued`)
    }
    // While A talks, nothing starts, however often both replicas try.
    // Hot loops of tries on SQLite starve the other process's writer (one file lock): there the
    // race is the hook's and both sweepers' (every 20 ms).
    const hot = DIALECT !== 'sqlite'
    if (hot) await b.call({ op: 'race', threadId })
    const tries = () =>
      Promise.all(Array.from({ length: 2 }, () => a.runtime.queue.startNext(threadId)))
    assert.notInclude(await tries(), true)
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.deepEqual(held.log, ['start:hold A'])
    assert.isNull(
      await a.db.connection().from(tables.aguiRuns).where('run_id', queuedIds[0]).first()
    )

    held.release('hold A')
    // Both replicas race: A's end starts the next on replica a; both sweepers and both loops
    // of tries go on at once.
    let racing = true
    const race = (async () => {
      while (racing && hot) {
        await tries().catch(() => {})
        // A pause: better-sqlite3 answers within the same turn of the event loop.
        await new Promise((resolve) => setTimeout(resolve, 15))
      }
    })()
    await until(() => streamEnded(a.db, queuedIds.at(-1)!), 'the last ran')
    racing = false
    await race
    await b.call({ op: 'calm' })
    await Promise.all(streams)
    assert.lengthOf(await queueOf(a.db, threadId), 0)
    // Once each, in order, one at a time: each stream opened after the one before ended.
    let endedAt = 0
    for (const [i, runId] of [runA, ...queuedIds].entries()) {
      const runs = await a.db.connection().from(tables.aguiRuns).where('run_id', runId)
      assert.lengthOf(runs, 1)
      const frames = await a.db.connection().from(tables.frames).where('run_id', runId)
      const said = frames.filter((f) => f.body.includes('user-message'))
      assert.lengthOf(said, 1, runId)
      const answers = frames.filter((f) => f.kind === 'text')
      assert.lengthOf(answers, 1, runId)
      assert.equal(answers[0].body, `answer to ${i === 0 ? 'hold A' : 'BCDEFG'[i - 1]}`)
      const stream = await a.db.connection().from(tables.streams).where('run_id', runId).first()
      assert.equal(stream.status, 'ended')
      assert.isAtLeast(Number(stream.created_at), endedAt)
      endedAt = Number(stream.ended_at)
    }
    assert.equal(held.maxActive, 1)
  })
})

import { test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import type { Database } from '@adonisjs/lucid/database'
import { createAgUiFetchHandler } from '../src/http/fetch_handler.js'
import { createUiMessageFetchHandler } from '../src/http/ui_message_fetch_handler.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { DIALECT } from './helpers/db.js'
import { serveRuntime } from './helpers/fetch_node.js'
import { newSecret } from './helpers/webhooks.js'
import { readUntil } from './helpers/http.js'

/**
 * Issue 26, a new run's start: `RUN_STARTED` (useChat: `start`) reaches the client after at most
 * two round trips to the database, one read of the thread and ONE transaction that creates the
 * stream, claims and locks the thread, records the run and writes the `run.started` outbox row.
 * Counted from Lucid's query events, over HTTP on loopback, through both doors' Fetch handlers.
 */

interface Statement {
  sql: string
  tx: string | null
}

/** Every statement the database is sent from now on, with the transaction it belongs to. */
function recordStatements(db: Database) {
  const log: Statement[] = []
  const clients = new Set([db.connection().getReadClient(), db.connection().getWriteClient()])
  const listener = (query: { sql: string; __knexTxId?: string }) =>
    log.push({ sql: query.sql, tx: query.__knexTxId ?? null })
  for (const client of clients) client.on('query', listener)
  return {
    log,
    stop: () => {
      for (const client of clients) client.off('query', listener)
    },
  }
}

/**
 * What the start path sends before the client has its first event: the log up to then, without
 * what runs beside it once the stream is open and is never waited for by the reply (the
 * writer's commits of the run's frames, the stop watch's and the tail's batched reads of the
 * streams' rows, the readers' reads of stored rows: what every reader and segment does).
 */
function startPath(log: Statement[]) {
  // The start's transaction records the run; a transaction begun after its COMMIT is a commit
  // of the run's frames (the writer's), beside the reply.
  const recording = log.find((s) => s.tx && /insert into .agent_agui_runs./i.test(s.sql))?.tx
  const commit = log.findIndex((s) => s.tx === recording && /^commit/i.test(s.sql))
  const before = new Set(log.slice(0, commit + 1).map((s) => s.tx))
  return log.filter(
    (s) =>
      !(s.tx && !before.has(s.tx)) &&
      !/from .agent_streams. where .run_id. in \(/i.test(s.sql) &&
      // The tail's first read of a stream it starts to follow (its row joined to its last row).
      !/from .agent_streams. as .s. left join .agent_stream_frames./i.test(s.sql) &&
      // The readers' reads of stored rows (the tail's, the replay's).
      !/^select .seq., .kind., .body./i.test(s.sql) &&
      // The clock's periodic reading (timed, not part of any request).
      !/as now_ms/i.test(s.sql)
  )
}

/** Round trips: each statement outside a transaction, and each transaction. */
function roundTrips(statements: Statement[]) {
  const transactions = new Set(statements.filter((s) => s.tx).map((s) => s.tx))
  return statements.filter((s) => !s.tx).length + transactions.size
}

/** Read a response's SSE body until its first `data:` line; returns that line's JSON. */
const firstEvent = (response: Response) =>
  readUntil(response, (text) => {
    const line = text.split('\n').find((l) => l.startsWith('data:') && l.endsWith('}'))
    return line ? JSON.parse(line.slice(5)) : undefined
  })

/**
 * A runner that writes once the test lets it (`hold`, then `release`): the count ends at the
 * client's first event, so the run's own frames and end are not mixed into it however slow the
 * machine is (they run beside the reply anyway).
 */
const gate = { held: Promise.resolve(), release: () => {} }
const hold = () => {
  gate.held = new Promise<void>((resolve) => (gate.release = resolve))
}
const talker: AgentRunner = {
  name: 'talker',
  async start(ctx) {
    await gate.held
    await ctx.writer.write({ t: 'text', v: 'Hello' })
    return { status: 'finished' }
  },
  resume: async () => ({ status: 'finished' }),
}

async function serve() {
  return serveRuntime(
    {
      runner: talker,
      webhooks: { endpoints: [{ url: 'http://127.0.0.1:9/hook', secret: newSecret() }] },
    },
    (runtime, principal) => {
      const agui = createAgUiFetchHandler(runtime.door, { basePath: '/agui', principal })
      const chat = createUiMessageFetchHandler(runtime.uiMessage, { principal })
      return (request) =>
        new URL(request.url).pathname.startsWith('/agui') ? agui(request) : chat(request)
    }
  )
}

const aguiPost = (url: string, threadId: string) =>
  fetch(`${url}/agui`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'accept': 'text/event-stream',
      'x-user': 'alice',
    },
    body: JSON.stringify({
      threadId,
      runId: `run-${randomUUID()}`,
      messages: [{ id: `u-${randomUUID()}`, role: 'user', content: 'Hello there' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  })

const chatPost = (url: string, chatId: string) =>
  fetch(`${url}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user': 'alice' },
    body: JSON.stringify({
      id: chatId,
      trigger: 'submit-message',
      messages: [
        { id: `u-${randomUUID()}`, role: 'user', parts: [{ type: 'text', text: 'Hello' }] },
      ],
    }),
  })

/** What one new run's start sends, through `post`, once the sink is warm (its clock read). */
async function countStart(
  served: Awaited<ReturnType<typeof serve>>,
  post: (url: string, thread: string) => Promise<Response>,
  first: string
) {
  // A first run warms the sink (its clock is read once per sweep interval).
  // Read to its end: its serve loop is done before the count starts.
  const warm = await post(served.url, `thread-${randomUUID()}`)
  await warm.text()
  await served.runtime.driver.settled()
  hold()
  const recorder = recordStatements(served.db)
  const response = await post(served.url, `thread-${randomUUID()}`)
  const event = await firstEvent(response).finally(() => gate.release())
  recorder.stop()
  await served.runtime.driver.settled()
  return { event, response, statements: startPath(recorder.log), all: recorder.log, first }
}

/** Statements in the one transaction of a new thread's start, per dialect (BEGIN and COMMIT too). */
const IN_TRANSACTION = {
  // BEGIN, the stream, the thread's upsert (claim and lock), the newest run, the run, the
  // outbox row, COMMIT.
  sqlite: 7,
  // The same and PostgreSQL's NOTIFY.
  pg: 8,
  // MySQL has no upsert returning the row: the upsert, then a locking read of the owner.
  mysql: 8,
}[DIALECT]

function assertOneTransaction(assert: any, counted: Awaited<ReturnType<typeof countStart>>) {
  const { statements } = counted
  const message = `statements before the first event:\n${statements.map((s) => `${s.tx ?? '-'} ${s.sql}`).join('\n')}`
  assert.isAtMost(roundTrips(statements), 2, message)
  const transactions = [...new Set(statements.filter((s) => s.tx).map((s) => s.tx))]
  assert.lengthOf(transactions, 1, message)
  const inside = statements.filter((s) => s.tx === transactions[0])
  assert.equal(inside.length, IN_TRANSACTION, message)
  assert.isAtMost(statements.length, IN_TRANSACTION + 1, message)
  // The run, its stream, its thread's claim and its outbox row commit together.
  for (const table of [
    'agent_streams',
    'agent_threads',
    'agent_agui_runs',
    'agent_webhook_deliveries',
  ]) {
    assert.isTrue(
      inside.some((s) => new RegExp(`insert (ignore )?into .${table}.`, 'i').test(s.sql)),
      `${table} is written in the start's transaction\n${message}`
    )
  }
}

test.group('A new run starts in one transaction (issue 26)', () => {
  test('AG-UI POST: RUN_STARTED after one read and one transaction', async ({
    assert,
    cleanup,
  }) => {
    const served = await serve()
    cleanup(served.close)
    const counted = await countStart(served, aguiPost, 'RUN_STARTED')
    assert.equal(counted.response.status, 200)
    assert.equal(counted.event.type, 'RUN_STARTED')
    assertOneTransaction(assert, counted)
  }).timeout(30_000)

  test('useChat POST: start after one read and one transaction', async ({ assert, cleanup }) => {
    const served = await serve()
    cleanup(served.close)
    const counted = await countStart(served, chatPost, 'start')
    assert.equal(counted.response.status, 200)
    assert.equal(counted.event.type, 'start')
    assertOneTransaction(assert, counted)
  }).timeout(30_000)
})

import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import AgentStreamPurge from '../commands/purge.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { tableNames } from '../src/store/schema.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { resetTables } from './helpers/db.js'
import { postJson, readResponse, runInput, serveApp } from './helpers/http.js'
import { setupParking } from './helpers/parking.js'

/**
 * `agent-stream:purge` on the three databases: a purged stream leaves no row in any table of the
 * package (frames, parks of the run and of its sub-agent, approvals, question sets, both doors'
 * run rows, stored checkpoints), its admin pages answer 404, and a stream not due keeps every
 * row it had.
 */

const TABLES = tableNames()
/** How each table names the stream a row belongs to. */
const STREAM_COLUMN: Record<string, string> = {
  [TABLES.streams]: 'run_id',
  [TABLES.frames]: 'run_id',
  [TABLES.checkpoints]: 'run_id',
  [TABLES.suspensions]: 'stream_run_id',
  [TABLES.approvals]: 'stream_run_id',
  [TABLES.elicitations]: 'stream_run_id',
  [TABLES.aguiRuns]: 'stream_run_id',
}

const scripted = scriptedAgent()
/** `full`: every step of the scripted agent (text, approval, question set, a sub-agent's park). */
const runner: AgentRunner = {
  async start(ctx) {
    if ((ctx.input as { message?: string } | null)?.message === 'full') return scripted.start(ctx)
    await ctx.writer.write({ t: 'text', v: 'Hello from the chat. ' })
    return { status: 'finished' }
  },
  resume: (ctx) => scripted.resume(ctx),
}

const ADMIN = { 'x-admin': 'yes', 'x-user': 'alice' }

async function setup() {
  const served = await serveApp({ runner, agui: { checkpointEvery: 2, storedCheckpointEvery: 2 } })
  const db: Database = await served.app.container.make('lucid.db')
  await resetTables(db)
  const { url, agentStream } = served
  const decide = async (runId: string, itemId: string, action: string, body = {}) => {
    const response = await postJson(`${url}/items/${runId}/${itemId}/${action}`, body)
    if (response.status !== 200) throw new Error(`${action} ${itemId}: ${response.status}`)
    await response.text()
    await agentStream.driver.settled()
  }
  /** An AG-UI run through every step, each park decided over HTTP, then re-attached. */
  const fullRun = async (threadId: string, runId: string) => {
    const input = runInput(threadId, runId, {
      messages: [{ id: 'u', role: 'user', content: 'full' }],
    })
    await (await postJson(`${url}/agui`, input)).text()
    await agentStream.driver.settled()
    await decide(runId, `${runId}.call2`, 'approve')
    await decide(runId, `${runId}.call3`, 'answer', { answers: { format: ['csv'] } })
    await decide(`${runId}.sub1`, `${runId}.sub1.call`, 'approve')
    // A re-attach from the start stores translator checkpoints along the way.
    await (await fetch(`${url}/agui/runs/${runId}`, { headers: { 'x-user': 'alice' } })).text()
    await agentStream.door.checkpointWrites()
  }
  /** A useChat turn (the other door's run row). */
  const chat = async (chatId: string) => {
    const response = await postJson(`${url}/chat`, {
      id: chatId,
      messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
    })
    await response.text()
    await agentStream.driver.settled()
    const row = await db.from(TABLES.aguiRuns).where('thread_id', chatId).firstOrFail()
    return row.stream_run_id as string
  }
  /** Rows of every package table, per stream among `streams`, and in all. */
  const count = async (streams: string[]) => {
    const out: Record<string, Record<string, number>> = {}
    for (const [table, column] of Object.entries(STREAM_COLUMN)) {
      const rows: Record<string, unknown>[] = await db.from(table).select(column)
      out[table] = { all: rows.length }
      for (const stream of streams)
        out[table][stream] = rows.filter((row) => row[column] === stream).length
    }
    return out
  }
  const endedAt = (runIds: string[], at: number) =>
    db.from(TABLES.streams).whereIn('run_id', runIds).update({ ended_at: at })
  return { ...served, db, fullRun, chat, count, endedAt }
}

async function purgeCommand(app: Awaited<ReturnType<typeof setup>>['app'], argv: string[]) {
  const ace = await app.container.make('ace')
  ace.ui.switchMode('raw')
  const command = await ace.create(AgentStreamPurge, argv)
  await command.exec()
  return command
}

test.group('agent-stream:purge', () => {
  test('removes every row a purged stream owned, in every table; a stream not due keeps all of its', async ({
    assert,
  }) => {
    const stack = await setup()
    await stack.fullRun('thread-old', 'run-old')
    await stack.fullRun('thread-new', 'run-new')
    const chatOld = await stack.chat('chat-old')
    const chatNew = await stack.chat('chat-new')
    const purged = ['run-old', chatOld]
    const kept = ['run-new', chatNew]
    await stack.endedAt(purged, Date.now() - 60_000)
    await stack.endedAt(kept, Date.now() + 60_000)

    const before = await stack.count([...purged, ...kept])
    // The scenario holds rows of the purged run in every table of the package.
    for (const table of Object.keys(STREAM_COLUMN)) {
      assert.isAbove(before[table]['run-old'], 0, `${table} of run-old`)
      assert.isAbove(before[table]['run-new'], 0, `${table} of run-new`)
    }
    assert.equal(before[TABLES.aguiRuns][chatOld], 1)
    assert.equal(before[TABLES.suspensions]['run-old'], 3)
    // The sub-agent's park is the child's row in the stream.
    const child = await stack.db
      .from(TABLES.approvals)
      .where('run_id', 'run-old.sub1')
      .firstOrFail()
    assert.equal(child.stream_run_id, 'run-old')
    const item = `${stack.url}/admin/items/run-old/run-old.call2`
    assert.equal((await fetch(item, { headers: ADMIN })).status, 200)
    assert.equal((await fetch(`${stack.url}/admin/runs/run-old`, { headers: ADMIN })).status, 200)

    const command = await purgeCommand(stack.app, ['--older-than', '30s', '--batch-size', '1'])
    command.assertSucceeded()
    command.assertLog('[ green(success) ] Deleted 2 ended stream(s)')

    const after = await stack.count([...purged, ...kept])
    for (const table of Object.keys(STREAM_COLUMN)) {
      for (const stream of purged) assert.equal(after[table][stream], 0, `${table} of ${stream}`)
      for (const stream of kept)
        assert.equal(after[table][stream], before[table][stream], `${table} of ${stream}`)
      assert.equal(
        after[table].all,
        kept.reduce((sum, stream) => sum + before[table][stream], 0),
        `${table}: nothing else left`
      )
    }
    // Its pages answer 404, the item's and the run's, as for a run that never was.
    for (const path of [
      '/admin/items/run-old/run-old.call2',
      '/admin/items/run-old.sub1/run-old.sub1.call',
      '/admin/runs/run-old',
    ]) {
      const page = await readResponse(await fetch(`${stack.url}${path}`, { headers: ADMIN }))
      assert.equal(page.status, 404, path)
      assert.notInclude(page.text, 'Nothing was said before this ask.')
    }
    assert.equal((await fetch(`${stack.url}/admin/runs/run-new`, { headers: ADMIN })).status, 200)
    // The AG-UI door and the chat door no longer know the purged run and chat.
    const reattach = await fetch(`${stack.url}/agui/runs/run-old`, {
      headers: { 'x-user': 'alice' },
    })
    assert.equal(reattach.status, 404)
    await reattach.text()
  }).timeout(60_000)

  test('rows an earlier purge left without their stream go once old enough; --dry-run deletes nothing', async ({
    assert,
  }) => {
    const stack = await setup()
    await stack.fullRun('thread-left', 'run-left')
    const chat = await stack.chat('chat-left')
    // What the purge of an earlier release did: the stream and its frames only.
    for (const stream of ['run-left', chat]) {
      await stack.db.from(TABLES.streams).where('run_id', stream).delete()
      await stack.db.from(TABLES.frames).where('run_id', stream).delete()
    }
    const hoursAgo = Date.now() - 2 * 3_600_000
    for (const table of [TABLES.suspensions, TABLES.approvals, TABLES.elicitations])
      await stack.db.from(table).where('stream_run_id', 'run-left').update({ created_at: hoursAgo })
    await stack.db
      .from(TABLES.aguiRuns)
      .where('stream_run_id', 'run-left')
      .update({ created_at: hoursAgo })
    const before = await stack.count(['run-left', chat])
    assert.isAbove(before[TABLES.approvals]['run-left'], 0)

    const dry = await purgeCommand(stack.app, ['--dry-run', '--older-than', '0'])
    dry.assertSucceeded()
    dry.assertLog('[ blue(info) ] 0 ended stream(s) would be deleted')
    assert.deepEqual(await stack.count(['run-left', chat]), before)

    const command = await purgeCommand(stack.app, ['--older-than', '0'])
    command.assertSucceeded()
    const after = await stack.count(['run-left', chat])
    for (const table of Object.keys(STREAM_COLUMN))
      assert.equal(after[table]['run-left'], 0, `${table} of run-left`)
    // The chat's door row is new: it may be a run about to open its stream, so it stays.
    assert.equal(after[TABLES.aguiRuns][chat], 1)
  }).timeout(60_000)

  test('a bad --batch-size is refused and deletes nothing', async ({ assert }) => {
    const stack = await setup()
    const chat = await stack.chat('chat-bad')
    await stack.endedAt([chat], Date.now() - 60_000)
    const before = await stack.count([chat])
    for (const size of ['0', '1.5', '-3']) {
      const command = await purgeCommand(stack.app, ['--batch-size', size])
      command.assertFailed()
      command.assertLog('[ red(error) ] --batch-size must be a whole number from 1 to 10000')
    }
    assert.deepEqual(await stack.count([chat]), before)
  })

  test('batches: a bounded number of streams per transaction, the same few statements each', async ({
    assert,
  }) => {
    const stack = await setupParking({ steps: ['reasoning', 'read'] })
    const runIds = ['b1', 'b2', 'b3', 'b4', 'b5']
    for (const runId of runIds) await (await stack.driver.start({ runId })).done
    await stack.driver.settled()
    const queries: { sql: string; bindings: unknown[] }[] = []
    stack.db
      .connection()
      .getWriteClient()
      .on('query', (query: { sql: string; bindings?: unknown[] }) =>
        queries.push({ sql: query.sql, bindings: query.bindings ?? [] })
      )
    assert.equal(await stack.sink.purge({ olderThanMs: -1000, batchSize: 2 }), 5)

    // Each transaction: from its BEGIN to its COMMIT.
    const transactions: (typeof queries)[] = []
    let inside = false
    for (const query of queries) {
      if (/^(begin|start transaction)/i.test(query.sql)) {
        inside = true
        transactions.push([])
      } else if (/^commit/i.test(query.sql)) inside = false
      else if (inside) transactions.at(-1)!.push(query)
    }
    assert.lengthOf(transactions, 3)
    for (const statements of transactions) {
      // As many statements for a batch of 2 streams as for 1, whatever their frames: no loop per row.
      assert.equal(statements.length, transactions[0].length)
      assert.isBelow(statements.length, 16)
      for (const { bindings } of statements)
        assert.isAtMost(bindings.filter((b) => runIds.includes(b as string)).length, 2)
    }
    const left = await stack.db.from('agent_stream_frames').whereIn('run_id', runIds)
    assert.lengthOf(left, 0)
  })
})

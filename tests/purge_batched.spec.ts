import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import AgentStreamInspect from '../commands/inspect.js'
import { defineConfig } from '../src/define_config.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { tableNames } from '../src/store/schema.js'
import { resetTables, snapshotTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { setupParking } from './helpers/parking.js'

/**
 * The batched purge at scale, on the three databases: streams seeded in bulk with a row in every
 * table a stream owns; a purge removes exactly the due ones and all their rows (every table
 * compared whole, before and after), keeps a stream reopened between the batch's select and its
 * delete, runs the same few statements per transaction whatever the batch size, and runs on a
 * schedule (config `purge`) that `agent-stream:inspect --purge` shows.
 */

const T = tableNames()
const DAY = 86_400_000

/**
 * One stream with a row in every table it can own; `due`: ended two days ago (`endedAt`
 * instead), else open. `parked`: its park still waits (status `parked`): never purged.
 */
function streamRows(runId: string, due: boolean, endedAt?: number, parked = false) {
  const at = endedAt ?? Date.now() - 2 * DAY
  const park = { run_id: runId, park: 1, stream_run_id: runId, thread_id: `t-${runId}` }
  const item = { ...park, stream_seq: 1, approver: 'requester', status: 'approved', created_at: at }
  return {
    [T.streams]: [
      {
        run_id: runId,
        last_seq: 2,
        rev: 2,
        status: due ? 'ended' : 'open',
        created_at: at,
        updated_at: at,
        ended_at: due ? at : null,
      },
    ],
    [T.frames]: [1, 2].map((seq) => ({
      run_id: runId,
      seq,
      kind: seq === 2 ? 'end' : 'text',
      body: seq === 2 ? '' : 'hi',
      created_at: at,
    })),
    [T.checkpoints]: [
      {
        run_id: runId,
        key: 'agui',
        seq: 1,
        incarnation: at,
        row: 'r',
        state: '{}',
        created_at: at,
      },
    ],
    [T.suspensions]: [
      { ...park, status: parked ? 'parked' : 'resumed', created_at: at, updated_at: at },
    ],
    [T.approvals]: [{ ...item, item_id: `${runId}.a`, tool_name: 'tool' }],
    [T.elicitations]: [{ ...item, item_id: `${runId}.q` }],
    [T.aguiRuns]: [
      {
        run_id: `agui-${runId}`,
        thread_id: `t-${runId}`,
        stream_run_id: runId,
        after_seq: 0,
        kind: 'start',
        created_at: at,
      },
    ],
    [T.webhookDeliveries]: [
      {
        id: `d-${runId}`,
        event_type: 'run.finished',
        endpoint: 'http://127.0.0.1/hook',
        stream_run_id: runId,
        run_id: runId,
        payload: '{}',
        status: 'delivered',
        attempts: 1,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      },
    ],
    [T.durableStreams]: [
      { run_id: runId, path: `/p/${runId}`, content_type: 'application/json', created_at: at },
    ],
    [T.durableProducers]: [
      { run_id: runId, producer_id: 'p', epoch: 0, last_seq: 1, updated_at: at },
    ],
  }
}

/** Insert `runIds`' rows, table by table, in chunks (SQLite takes 500 rows a statement). */
async function seed(
  db: Database,
  runIds: string[],
  due: boolean,
  endedAt?: (index: number) => number,
  parked = false
) {
  const byTable: Record<string, Record<string, unknown>[]> = {}
  for (const [index, runId] of runIds.entries()) {
    const rowsOf = streamRows(runId, due, endedAt?.(index), parked)
    for (const [table, rows] of Object.entries(rowsOf)) {
      ;(byTable[table] ??= []).push(...rows)
    }
  }
  for (const [table, rows] of Object.entries(byTable)) {
    for (let i = 0; i < rows.length; i += 200) {
      await db
        .connection()
        .knexQuery()
        .table(table)
        .insert(rows.slice(i, i + 200))
    }
  }
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`)

/** Statements of each transaction the `run` ran on `db`'s write client, from BEGIN to COMMIT. */
async function transactionsOf(db: Database, run: () => Promise<unknown>) {
  const statements: string[] = []
  const listener = (query: { sql: string }) => statements.push(query.sql)
  const client = db.connection().getWriteClient()
  client.on('query', listener)
  try {
    await run()
  } finally {
    client.off('query', listener)
  }
  const transactions: string[][] = []
  let inside = false
  for (const sql of statements) {
    if (/^(begin|start transaction)/i.test(sql)) {
      inside = true
      transactions.push([])
    } else if (/^commit/i.test(sql)) inside = false
    else if (inside) transactions.at(-1)!.push(sql)
  }
  return transactions
}

test.group('purge, batched', () => {
  test('removes exactly the due streams and all their rows in every table, leaves the rest', async ({
    assert,
  }) => {
    const stack = await setupParking()
    const old = Date.now() - 30 * DAY
    await seed(stack.db, ids('keep', 5), false)
    // Parked runs' ended streams, among the due ones and at their very ends: never purged.
    await seed(stack.db, ids('parked', 45), true, (i) => old + (i % 3) * 1000, true)
    const before = await snapshotTables(stack.db)
    // Clustered ends: 100 in one millisecond (ties across batches), 100 a second apart, a
    // ten-day gap, then 50 spread over hours: the walk's windows widen and narrow across them.
    await seed(stack.db, ids('tie', 100), true, () => old)
    await seed(stack.db, ids('second', 100), true, (i) => old + i * 1000)
    await seed(stack.db, ids('late', 50), true, (i) => old + 10 * DAY + i * 3_600_000)
    assert.equal(await stack.sink.purge({ olderThanMs: DAY, batchSize: 40 }), 250)
    assert.equal(await snapshotTables(stack.db), before)
  })

  test('a stream reopened between the batch select and its delete keeps every row', async ({
    assert,
  }) => {
    const stack = await setupParking()
    await seed(stack.db, ids('due', 4), true)
    const store = sinkInternals(stack.sink).store
    const endedBefore = Date.now() - DAY
    const batch = (await store.purgeWalk(endedBefore, 10).next())!.map((c) => c.runId)
    assert.lengthOf(batch, 4)
    // A resume reopens it now, between the select and the delete.
    await stack.db
      .from(T.streams)
      .where('run_id', 'due-2')
      .update({ status: 'open', ended_at: null })
    const { deleted, kept } = await store.purge(batch, endedBefore)
    assert.equal(deleted, 3)
    assert.deepEqual([...kept], ['due-2'])
    const left = await stack.db.from(T.frames).select('run_id').distinct('run_id')
    assert.deepEqual(
      left.map((row) => row.run_id),
      ['due-2']
    )
    assert.lengthOf(await stack.db.from(T.aguiRuns), 1)
    assert.lengthOf(await stack.db.from(T.checkpoints), 1)
  })

  test('two purges at once remove every due stream once between them', async ({ assert }) => {
    const stack = await setupParking()
    await seed(stack.db, ids('due', 120), true)
    const counts = await Promise.all([
      stack.sink.purge({ olderThanMs: DAY, batchSize: 30 }),
      stack.sink.purge({ olderThanMs: DAY, batchSize: 30 }),
    ])
    // Each counts what its own deletes removed; whatever one left is the next run's.
    const left = Number((await stack.db.from(T.streams).count('* as n').first())?.n)
    assert.equal(counts[0] + counts[1] + left, 120)
    assert.equal(await stack.sink.purge({ olderThanMs: DAY }), left)
    assert.lengthOf(await stack.db.from(T.frames), 0)
  })

  test('the same few statements per transaction whatever the batch size', async ({ assert }) => {
    const stack = await setupParking()
    const per: number[] = []
    for (const batchSize of [1, 10, 100]) {
      await seed(stack.db, ids(`b${batchSize}`, batchSize), true)
      const transactions = await transactionsOf(stack.db, () =>
        stack.sink.purge({ olderThanMs: DAY, batchSize })
      )
      // One batch: the streams are exactly one batch's worth.
      assert.lengthOf(transactions, 1)
      per.push(transactions[0].length)
    }
    assert.equal(per[1], per[0])
    assert.equal(per[2], per[0])
    assert.isBelow(per[0], 16)
  })
})

test.group('purge, scheduled', () => {
  test('config purge runs in the background and inspect --purge shows its last run', async ({
    assert,
  }) => {
    const served = await serveApp({ purge: { every: '1s', batchSize: 7 }, ttl: '1d' })
    const db: Database = await served.app.container.make('lucid.db')
    await resetTables(db)
    await seed(db, ids('due', 20), true)
    await seed(db, ids('keep', 2), false)
    const schedule = served.agentStream.purgeSchedule!
    // Started on ready, as the sweeper (a web process; never an ace command's).
    assert.isFalse(schedule.started)
    await served.app.start(() => {})
    assert.isTrue(schedule.started)
    const inspect = async () => {
      const ace = await served.app.container.make('ace')
      ace.ui.switchMode('raw')
      const command = await ace.create(AgentStreamInspect, ['--purge', '--json'])
      await command.exec()
      command.assertSucceeded()
      return JSON.parse(String(command.logger.getLogs()[0].message)).purge
    }
    const pending = await inspect()
    assert.equal(pending.due, 20)
    assert.equal(pending.schedule.everyMs, 1000)
    assert.equal(pending.schedule.batchSize, 7)
    const deadline = Date.now() + 5000
    while (schedule.status().lastPurged === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const shown = await inspect()
    assert.equal(shown.due, 0)
    assert.equal(shown.schedule.status.lastPurged, 20)
    assert.equal(shown.schedule.status.totalPurged, 20)
    assert.isNull(shown.schedule.status.lastError)
    assert.isAtLeast(shown.schedule.status.lastDurationMs, 0)
    assert.isAbove(
      Date.parse(shown.schedule.status.nextDueAt),
      Date.parse(shown.schedule.status.lastRunAt)
    )
    assert.lengthOf(await db.from(T.streams), 2)
  })

  test("stop: a purge in flight ends after its batch, the rest is the next run's", async ({
    assert,
  }) => {
    const stack = await setupParking()
    await seed(stack.db, ids('due', 30), true)
    const { PurgeSchedule } = await import('../src/sink/purge_schedule.js')
    const schedule = new PurgeSchedule({ everyMs: 60_000, batchSize: 10 }, (options) =>
      stack.sink.purge({ ...options, olderThanMs: DAY })
    )
    schedule.start()
    const run = schedule.runNow()
    // Aborted before its first batch (the run is at its first await).
    await schedule.stop()
    await run
    assert.equal(schedule.status().lastPurged, 0)
    assert.isNull(schedule.status().nextDueAt)
    assert.lengthOf(await stack.db.from(T.streams), 30)
    schedule.start()
    await schedule.runNow()
    assert.equal(schedule.status().totalPurged, 30)
    await schedule.stop()
  })

  test('an invalid purge config is refused at boot, naming the field', ({ assert }) => {
    const cases: [unknown, string][] = [
      [{}, '"purge.every" is required'],
      [{ every: '10ms' }, '"purge.every" must be a duration of at least 1000 ms'],
      [{ every: 'soon' }, '"purge.every" must be a duration of at least 1000 ms'],
      [{ every: '10m', batchSize: 0 }, '"purge.batchSize" must be an integer from 1 to 10000'],
      [{ every: '10m', batchSize: 2.5 }, '"purge.batchSize" must be an integer from 1 to 10000'],
    ]
    for (const [purge, message] of cases) {
      assert.throws(() => defineConfig({ purge: purge as any }), message)
    }
  })
})

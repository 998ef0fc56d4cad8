import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import AgentStreamInspect from '../commands/inspect.js'
import AgentStreamPurge from '../commands/purge.js'
import { inspectPurge } from '../src/inspection/index.js'
import { PurgeSchedule } from '../src/sink/purge_schedule.js'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { PurgeRuns } from '../src/store/purge_runs.js'
import { dropPurgeRunsTable } from '../src/store/purge_runs_schema.js'
import { tableNames } from '../src/store/schema.js'
import { setupApp } from './helpers/app.js'
import { resetTables } from './helpers/db.js'
import { serveApp } from './helpers/http.js'
import { setupParking } from './helpers/parking.js'

/**
 * The purge schedule's last run is stored (the `purgeRuns` table), so `agent-stream:inspect
 * --purge` run from a shell (an ace command: an app of its own, whose schedule never runs) shows
 * the last run of the web processes' schedule: when it started and ended, the streams it purged,
 * its error. A schema migrated before the table keeps purging.
 */

const T = tableNames()
const DAY = 86_400_000
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** `n` streams ended two days ago (due with a TTL of a day), no other row. */
async function seedEnded(db: Database, prefix: string, n: number) {
  const at = Date.now() - 2 * DAY
  const rows = Array.from({ length: n }, (_, i) => ({
    run_id: `${prefix}-${i}`,
    last_seq: 0,
    rev: 0,
    status: 'ended',
    created_at: at,
    updated_at: at,
    ended_at: at,
  }))
  await db.connection().knexQuery().table(T.streams).insert(rows)
}

/** `agent-stream:inspect --purge` in `app`, with `--json`: its `purge` object; else its lines. */
async function inspect(app: Awaited<ReturnType<typeof setupApp>>, json = true) {
  const ace = await app.container.make('ace')
  ace.ui.switchMode('raw')
  const command = await ace.create(AgentStreamInspect, ['--purge', ...(json ? ['--json'] : [])])
  await command.exec()
  command.assertSucceeded()
  const logs = command.ui.logger.getLogs().map((log) => String(log.message))
  return json ? JSON.parse(logs[0]).purge : logs
}

test.group('purge schedule: the last run, stored', () => {
  test('inspect --purge in another app (an ace command) shows the web process last run', async ({
    assert,
  }) => {
    const config = { purge: { every: '1m', batchSize: 4 }, ttl: '1d' }
    const web = await serveApp(config)
    const db: Database = await web.app.container.make('lucid.db')
    await resetTables(db)
    await seedEnded(db, 'due', 9)
    await web.app.start(() => {})
    const schedule = web.agentStream.purgeSchedule!
    assert.isTrue(schedule.started)
    await schedule.runNow()
    assert.equal(schedule.status().lastPurged, 9)

    // The command's own app: same config and database, its schedule never started.
    const shell = await setupApp(config)
    const agentStream = await shell.container.make('agentStream')
    assert.isFalse(agentStream.purgeSchedule!.started)
    const shown = await inspect(shell)
    assert.equal(shown.due, 0)
    assert.isNull(shown.schedule.status)
    const last = shown.schedule.lastRun
    assert.equal(last.purged, 9)
    assert.isNull(last.error)
    assert.match(last.startedAt, ISO)
    assert.match(last.endedAt, ISO)
    assert.isAtLeast(Date.parse(last.endedAt), Date.parse(last.startedAt))
    const lines = await inspect(shell, false)
    assert.include(lines, 'Last purged|9')
    assert.include(lines, 'Last error|-')
    assert.include(lines, `Last run|${last.startedAt}`)
  })

  test('a run in flight is stored as started; its end, streams purged and error when it ends', async ({
    assert,
  }) => {
    const stack = await setupParking()
    const runs = new PurgeRuns(() => sinkInternals(stack.sink).client, stack.sink.tables)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const errors: unknown[] = []
    let calls = 0
    const schedule = new PurgeSchedule(
      { everyMs: 60_000 },
      async () => {
        calls++
        await held
        if (calls === 1) throw Object.assign(new Error('the database went away'), { code: 'E_X' })
        return 3
      },
      (error) => errors.push(error),
      runs
    )
    const first = schedule.runNow()
    // Its start is stored before the purge runs (the purge waits on `held`).
    for (let i = 0; i < 100 && (await runs.last()) === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const running = await runs.last()
    assert.isNotNull(running)
    assert.isNull(running!.endedAt)
    assert.isNull(running!.purged)
    assert.isNull(running!.error)
    release()
    await first
    const failed = await runs.last()
    assert.equal(failed!.startedAt, running!.startedAt)
    assert.isAtLeast(failed!.endedAt!, failed!.startedAt)
    assert.isNull(failed!.purged)
    assert.equal(failed!.error, 'E_X: the database went away')
    assert.lengthOf(errors, 1)

    // The next run is the last one: its own start, end and count, the error gone.
    await schedule.runNow()
    const next = (await inspectPurge(stack.sink, { options: { everyMs: 60_000 } })).schedule
    assert.isAtLeast(next.lastRun!.startedAt, failed!.startedAt)
    assert.equal(next.lastRun!.purged, 3)
    assert.isNull(next.lastRun!.error)
    assert.isNotNull(next.lastRun!.endedAt)
    assert.lengthOf(await stack.db.from(T.purgeRuns), 1)
    await schedule.stop()
  })

  test('agent-stream:purge run by hand is stored as the last manual purge, beside the schedule run; a dry run stores nothing', async ({
    assert,
  }) => {
    const config = { purge: { every: '1m' }, ttl: '1d' }
    const web = await serveApp(config)
    const db: Database = await web.app.container.make('lucid.db')
    await resetTables(db)
    await seedEnded(db, 'due', 4)
    await web.app.start(() => {})
    await web.agentStream.purgeSchedule!.runNow()
    await seedEnded(db, 'later', 6)

    const shell = await setupApp(config)
    const ace = await shell.container.make('ace')
    ace.ui.switchMode('raw')
    const dry = await ace.create(AgentStreamPurge, ['--dry-run'])
    await dry.exec()
    dry.assertSucceeded()
    assert.isNull((await inspect(shell)).lastManualRun, 'a dry run is not stored')

    const purge = await ace.create(AgentStreamPurge, [])
    await purge.exec()
    purge.assertSucceeded()
    const shown = await inspect(shell)
    assert.equal(shown.lastManualRun.purged, 6)
    assert.isNull(shown.lastManualRun.error)
    assert.match(shown.lastManualRun.startedAt, ISO)
    assert.match(shown.lastManualRun.endedAt, ISO)
    // The schedule's last run is its own row, unchanged.
    assert.equal(shown.schedule.lastRun.purged, 4)
    const lines = await inspect(shell, false)
    assert.include(lines, 'Last manual purged|6')
    assert.include(lines, 'Last purged|4')
    assert.lengthOf(await db.from(T.purgeRuns), 2)
  })

  test('a manual purge that fails is stored with its error, and still throws it', async ({
    assert,
  }) => {
    const web = await serveApp({ ttl: '1d' })
    const db: Database = await web.app.container.make('lucid.db')
    await resetTables(db)
    const sink = web.agentStream.sink
    const purge = sink.purge.bind(sink)
    sink.purge = async () => {
      throw Object.assign(new Error('the database went away'), { code: 'E_X' })
    }
    try {
      await assert.rejects(() => web.agentStream.purge(), /the database went away/)
    } finally {
      sink.purge = purge
    }
    const shown = await inspectPurge(sink, {})
    assert.equal(shown.lastManualRun!.error, 'E_X: the database went away')
    assert.isNull(shown.lastManualRun!.purged)
    assert.isNotNull(shown.lastManualRun!.endedAt)
    assert.isNull(shown.schedule.lastRun)
  })

  test('a manual purge whose record cannot be written still purges and resolves with its count', async ({
    assert,
  }) => {
    const web = await serveApp({ ttl: '1d' })
    const db: Database = await web.app.container.make('lucid.db')
    await resetTables(db)
    await seedEnded(db, 'due', 3)
    // A table the record's writes fail on (a column gone), not a missing one (that is quiet).
    await db.connection().schema.alterTable(T.purgeRuns, (table) => table.dropColumn('purged'))
    assert.equal(await web.agentStream.purge(), 3)
    assert.lengthOf(await db.from(T.streams), 0)
    assert.lengthOf(await db.from(T.purgeRuns), 0)
  })

  test('a schema migrated before the table: the schedule purges, inspect shows no stored run', async ({
    assert,
  }) => {
    const stack = await setupParking()
    await dropPurgeRunsTable(stack.db.connection().schema)
    await seedEnded(stack.db, 'old', 5)
    const errors: unknown[] = []
    const schedule = new PurgeSchedule(
      { everyMs: 60_000 },
      (options) => stack.sink.purge({ ...options, olderThanMs: DAY }),
      (error) => errors.push(error),
      new PurgeRuns(() => sinkInternals(stack.sink).client, stack.sink.tables)
    )
    await schedule.runNow()
    assert.deepEqual(errors, [])
    assert.equal(schedule.status().lastPurged, 5)
    assert.lengthOf(await stack.db.from(T.streams), 0)
    const shown = await inspectPurge(stack.sink, { options: { everyMs: 60_000 } })
    assert.isNull(shown.schedule.lastRun)
  })
})

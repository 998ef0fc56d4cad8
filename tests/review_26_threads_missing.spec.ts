import { test } from '@japa/runner'
import { DoorRunStore } from '../src/store/door_runs.js'
import { tableNames } from '../src/store/schema.js'
import { createDatabase, resetTables } from './helpers/db.js'

/**
 * Review of issue 26: a new run's start is one transaction (stream, thread claim, run row,
 * webhook outbox row). A missing table in it is taken for "a schema without the threads table"
 * only when it IS the threads table: another one missing (the webhook outbox not migrated)
 * must not turn the thread claims off for the process's life.
 */
test.group('Review 26: a start failing on another missing table', () => {
  test('threadsMissing is false for a missing table that is not the threads table', async ({
    assert,
    cleanup,
  }) => {
    const db = createDatabase()
    cleanup(() => db.manager.closeAll())
    await resetTables(db)
    const runs = new DoorRunStore(() => db.connection(), tableNames())
    const error = await db
      .from('agent_review_no_such_table')
      .first()
      .then(
        () => null,
        (e: unknown) => e
      )
    assert.isNotNull(error)
    assert.isFalse(runs.threadsMissing(error))
    const missing = await db
      .from('agent_review_no_threads')
      .first()
      .then(
        () => null,
        (e: unknown) => e
      )
    const without = new DoorRunStore(
      () => db.connection(),
      tableNames({ threads: 'agent_review_no_threads' })
    )
    assert.isTrue(without.threadsMissing(missing))
  })
})

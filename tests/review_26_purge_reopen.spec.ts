import { test } from '@japa/runner'
import { tableNames } from '../src/store/schema.js'
import { setupParking } from './helpers/parking.js'
import { DIALECT } from './helpers/db.js'

/**
 * Review of issue 26: a purge that removes a stream while an open of it waits for its row's
 * lock. The purge locks the batch's stream rows and deletes them; an open (a host reopening an
 * ended stream) that found the row and then waited on the lock must not fail on the row being
 * gone: the stream is simply new again (created, writable).
 */
const T = tableNames()
const DAY = 86_400_000

test.group('Review 26: purge while a reopen waits', () => {
  test('an open waiting on a purge that removes its stream opens a new stream', async ({
    assert,
  }) => {
    const stack = await setupParking()
    const runId = 'review-reopen-1'
    const first = await stack.sink.open(runId)
    await first.write({ t: 'text', v: 'old' })
    await first.end()
    await stack.db
      .from(T.streams)
      .where('run_id', runId)
      .update({ ended_at: Date.now() - 2 * DAY })
    // What a purge's batch does: the stream's row locked, then deleted, then committed.
    const purge = await stack.db.transaction()
    // As `purgeStreams` locks them: FOR UPDATE (SQLite: a write takes the database's lock).
    if (DIALECT === 'sqlite') {
      await purge.from(T.streams).where('run_id', runId).update({ updated_at: Date.now() })
    } else {
      await purge.from(T.streams).where('run_id', runId).forUpdate()
    }
    const opening = stack.sink.open(runId).then(
      (writer) => ({ writer }),
      (error: unknown) => ({ error })
    )
    await new Promise((resolve) => setTimeout(resolve, 400))
    await purge.from(T.frames).where('run_id', runId).delete()
    await purge.from(T.streams).where('run_id', runId).delete()
    await purge.commit()
    const opened = await opening
    assert.notProperty(opened, 'error', String((opened as { error?: unknown }).error))
    const writer = (opened as { writer: Awaited<ReturnType<typeof stack.sink.open>> }).writer
    await writer.write({ t: 'text', v: 'new' })
    await writer.end()
    const row = await stack.db.from(T.streams).where('run_id', runId).first()
    assert.equal(row?.status, 'ended')
  }).timeout(20_000)
})

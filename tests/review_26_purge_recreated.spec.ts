import { test } from '@japa/runner'
import { sinkInternals } from '../src/sink/lucid_sink.js'
import { tableNames } from '../src/store/schema.js'
import { DIALECT } from './helpers/db.js'
import { setupParking } from './helpers/parking.js'

/**
 * Review of issue 26: a purge batch lists a stream another purge (another replica) removed
 * first, and the stream is opened again meanwhile (a host's stream id, a new run of it). The
 * batch's row lock does not see the new stream (committed after the lock's snapshot on
 * PostgreSQL), so it counts as "gone": its rows in the owned tables must not be deleted then,
 * they are the new stream's (its frames: lost, under a stream row that says they exist).
 */
const T = tableNames()
const DAY = 86_400_000

test.group('Review 26: purge and a stream opened again', () => {
  test("a batch's stream removed elsewhere and opened again keeps the new stream's rows", async ({
    assert,
  }) => {
    const stack = await setupParking()
    const old = Date.now() - 2 * DAY
    const streamRow = (runId: string, open: boolean, at: number) => ({
      run_id: runId,
      last_seq: 1,
      rev: 1,
      status: open ? 'open' : 'ended',
      created_at: at,
      updated_at: at,
      ended_at: open ? null : at,
    })
    const frameRow = (runId: string, at: number) => ({
      run_id: runId,
      seq: 1,
      kind: 'text',
      body: 'hi',
      created_at: at,
    })
    await stack.db.table(T.streams).insert(streamRow('due-y', false, old))
    await stack.db.table(T.frames).insert(frameRow('due-y', old))
    const store = sinkInternals(stack.sink).store
    // Another transaction holds the due stream's row: the purge's lock waits for it.
    const other = await stack.db.transaction()
    if (DIALECT === 'sqlite') {
      await other.from(T.streams).where('run_id', 'due-y').update({ updated_at: old })
    } else {
      await other.from(T.streams).where('run_id', 'due-y').forUpdate()
    }
    // 'zz-gone' was in the batch's walk, removed by another purge since: not in the table now.
    const purging = store.purge(['due-y', 'zz-gone'], Date.now() - DAY)
    await new Promise((resolve) => setTimeout(resolve, 400))
    // Meanwhile the stream is opened again, with a frame, and committed.
    const now = Date.now()
    await other.table(T.streams).insert(streamRow('zz-gone', true, now))
    await other.table(T.frames).insert(frameRow('zz-gone', now))
    await other.commit()
    const { deleted } = await purging
    assert.equal(deleted, 1)
    assert.lengthOf(await stack.db.from(T.streams).where('run_id', 'zz-gone'), 1)
    assert.lengthOf(await stack.db.from(T.frames).where('run_id', 'zz-gone'), 1)
    assert.lengthOf(await stack.db.from(T.frames).where('run_id', 'due-y'), 0)
  }).timeout(20_000)
})

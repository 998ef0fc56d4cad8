import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import { collect, runId, setupSink, textOf } from './helpers/sink.js'

/**
 * Issue 26, the leading edge of a message: its first text is committed at once in a transaction
 * of its own, never riding (and waiting) in a group of other streams' commits; the text that
 * follows is still coalesced into the same row and grouped.
 */

interface Statement {
  sql: string
  bindings: unknown[]
  tx: string | null
}

function recordStatements(db: Database) {
  const log: Statement[] = []
  const clients = new Set([db.connection().getReadClient(), db.connection().getWriteClient()])
  const listener = (query: { sql: string; bindings?: unknown[]; __knexTxId?: string }) =>
    log.push({ sql: query.sql, bindings: query.bindings ?? [], tx: query.__knexTxId ?? null })
  for (const client of clients) client.on('query', listener)
  return { log, stop: () => clients.forEach((client) => client.off('query', listener)) }
}

/** The streams a transaction of the log touched (the run ids among its statements' bindings). */
function streamsOf(log: Statement[], tx: string, ids: string[]) {
  const touched = new Set<string>()
  for (const statement of log.filter((s) => s.tx === tx)) {
    for (const id of ids) if (statement.bindings.includes(id)) touched.add(id)
  }
  return touched
}

test.group('Leading edge: a message first text commits alone, at once', () => {
  test('the first text does not ride in the group of commits due with it', async ({ assert }) => {
    const { sink, db } = await setupSink({ coalesceWindowMs: 50 })
    // Streams with an event each stored: their next events are plain appends, grouped.
    const others = Array.from({ length: 6 }, () => runId('busy'))
    const writers = await Promise.all(others.map((id) => sink.open(id)))
    const fresh = runId('fresh')
    const first = await sink.open(fresh)
    const reader = collect(sink.subscribe(fresh))
    const recorder = recordStatements(db)
    // All due in the same turn: without the leading edge they go in one group.
    await Promise.all([
      ...writers.map((writer, i) =>
        writer.write({ t: 'event', event: { kind: 'title', title: `${i}` } })
      ),
      first.write({ t: 'text', v: 'Hello' }),
    ])
    recorder.stop()
    const ids = [...others, fresh]
    const carrying = recorder.log.find(
      (s) => s.tx && /insert into .agent_stream_frames./i.test(s.sql) && s.bindings.includes(fresh)
    )
    assert.isDefined(carrying, 'the first text was committed')
    assert.deepEqual([...streamsOf(recorder.log, carrying!.tx!, ids)], [fresh])
    // The others still share transactions (the group commit stands).
    const theirs = new Set(
      recorder.log
        .filter(
          (s) => s.tx && s.tx !== carrying!.tx && /insert into .agent_stream_frames./i.test(s.sql)
        )
        .map((s) => s.tx)
    )
    assert.isBelow(theirs.size, others.length)
    // What follows is coalesced into the first text's row.
    for (const word of [' there', ',', ' how', ' are', ' you'])
      await first.write({ t: 'text', v: word })
    await first.end()
    await Promise.all(writers.map((writer) => writer.end()))
    assert.equal(textOf(await reader), 'Hello there, how are you')
    const rows = []
    for await (const page of sink.storedRows(fresh)) rows.push(...page)
    assert.isAtMost(rows.filter((row) => row.kind === 'text').length, 2)
  })
})

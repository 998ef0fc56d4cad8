import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import { sinkInternals, type LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'

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

/** Hold the next transaction's COMMIT until the returned function is called. */
function holdNextCommit(sink: LucidTokenStreamSink) {
  const client = sinkInternals(sink).store.client
  const transaction = client.transaction.bind(client)
  let release!: () => void
  let held: Promise<void> | null = new Promise<void>((resolve) => (release = resolve))
  client.transaction = (async (...args: any[]) => {
    const trx = await (transaction as any)(...args)
    if (held) {
      const gate = held
      held = null
      const commit = trx.commit.bind(trx)
      trx.commit = async () => {
        await gate
        return commit()
      }
    }
    return trx
  }) as any
  return () => {
    client.transaction = transaction
    release()
  }
}

test.group('Leading edge: a message first text never waits for a group in flight', () => {
  test('the first text goes alone while a group commits; the others wait for it', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ coalesceWindowMs: 50 })
    const open = (n: number, name: string) =>
      Promise.all(Array.from({ length: n }, () => sink.open(runId(name))))
    const [inFlight, waiting] = [await open(6, 'flight'), await open(6, 'waiting')]
    const fresh = runId('fresh')
    const first = await sink.open(fresh)
    const reader = collect(sink.subscribe(fresh))
    const recorder = recordStatements(db)
    const event = (title: string) => ({
      t: 'event' as const,
      event: { kind: 'title' as const, title },
    })
    // A group in flight, its COMMIT held back until the test lets it go...
    const release = holdNextCommit(sink)
    const flying = inFlight.map((writer, i) => writer.write(event(`a${i}`)))
    while (!recorder.log.some((s) => /^(begin|start transaction)/i.test(s.sql))) {
      await new Promise((resolve) => setImmediate(resolve))
    }
    // ...then other streams' appends and a message's first text, due together: the appends
    // wait for the group in flight and go in the next one; the first text does not wait.
    const due = [
      ...waiting.map((writer, i) => writer.write(event(`b${i}`))),
      first.write({ t: 'text', v: 'Hello' }),
    ]
    await sleep(50)
    release()
    await Promise.all([...flying, ...due])
    recorder.stop()
    const ids = [...inFlight, ...waiting].map((writer) => writer.runId).concat(fresh)
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
    assert.isBelow(theirs.size, 12)
    // What follows is coalesced into the first text's row.
    for (const word of [' there', ',', ' how', ' are', ' you']) {
      await first.write({ t: 'text', v: word })
    }
    await first.end()
    await Promise.all([...inFlight, ...waiting].map((writer) => writer.end()))
    assert.equal(textOf(await reader), 'Hello there, how are you')
    const rows = []
    for await (const page of sink.storedRows(fresh)) rows.push(...page)
    assert.isAtMost(rows.filter((row) => row.kind === 'text').length, 2)
  })
})

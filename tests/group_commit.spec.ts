import { test } from '@japa/runner'
import fc from 'fast-check'
import type { Database } from '@adonisjs/lucid/database'
import { StreamClosedError } from '../src/errors.js'
import { sinkInternals, type LucidTokenStreamSink } from '../src/sink/lucid_sink.js'
import type { LucidSinkWriter } from '../src/sink/writer.js'
import { collect, runId, setupSink, sleep, textOf } from './helpers/sink.js'

/**
 * Group commit (issue 11 item 3): the plain appends of several streams that are due together
 * ride in one transaction, and each stream keeps its own rules: seqs gap-free and in order under
 * its row lock, its own outcome (a closed stream fails alone), a retry after an unknown outcome
 * never writes twice (each member's token), order per writer under concurrent writers.
 */

/** Count the transactions the database sees (BEGINs), from now on. */
function countTransactions(db: Database) {
  let count = 0
  const clients = new Set([db.connection().getReadClient(), db.connection().getWriteClient()])
  const listener = (query: { sql: string }) => {
    if (/^\s*(begin|start transaction)/i.test(query.sql)) count++
  }
  for (const client of clients) client.on('query', listener)
  return {
    get count() {
      return count
    },
    stop: () => {
      for (const client of clients) client.off('query', listener)
    },
  }
}

async function storedRows(sink: LucidTokenStreamSink, id: string) {
  const rows = []
  for await (const page of sink.storedRows(id)) rows.push(...page)
  return rows
}

function assertGapFree(assert: any, rows: { seq: number }[]) {
  assert.deepEqual(
    rows.map((row) => row.seq),
    rows.map((_, i) => i + 1)
  )
}

/**
 * Make the next transaction a fault: its work runs, then `before` rolls it back and throws (the
 * outcome is known: nothing stored), `after` commits it and throws (stored, the reply lost),
 * each with `error`. Returns whether it fired.
 */
function faultNextTransaction(sink: LucidTokenStreamSink, when: 'before' | 'after', error: Error) {
  const client = sinkInternals(sink).store.client
  const transaction = client.transaction.bind(client)
  let armed = true
  let fired = false
  client.transaction = (async (...args: any[]) => {
    const trx = await (transaction as any)(...args)
    if (armed) {
      armed = false
      fired = true
      const commit = trx.commit.bind(trx)
      trx.commit = async () => {
        if (when === 'before') await trx.rollback()
        else await commit()
        throw error
      }
    }
    return trx
  }) as any
  return { fired: () => fired }
}

const transient = () =>
  Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104 })

/** Open `n` writers on fresh streams, each with a first text row already committed. */
async function openTalking(sink: LucidTokenStreamSink, n: number) {
  const ids = Array.from({ length: n }, () => runId('group'))
  const writers = await Promise.all(ids.map((id) => sink.open(id)))
  await Promise.all(writers.map((writer, i) => writer.write({ t: 'text', v: `s${i}:` })))
  return { ids, writers }
}

/** One round: every writer writes an event in the same turn (so they go in one group). */
function round(writers: LucidSinkWriter[], n: number) {
  return Promise.allSettled(
    writers.map((writer, i) =>
      writer.write({ t: 'event', event: { kind: 'title', title: `${i}.${n}` } })
    )
  )
}

test.group('Group commit | several streams in one transaction', () => {
  test('appends due together share a transaction; each stream gets gap-free seqs in order', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink({ coalesceWindowMs: 30 })
    const { ids, writers } = await openTalking(sink, 6)
    const readers = ids.map((id) => collect(sink.subscribe(id)))
    const transactions = countTransactions(db)
    for (let n = 0; n < 5; n++) {
      const settled = await round(writers, n)
      assert.deepEqual(
        settled.map((s) => s.status),
        writers.map(() => 'fulfilled')
      )
      await Promise.all(writers.map((writer, i) => writer.write({ t: 'text', v: `t${i}.${n} ` })))
    }
    // 6 streams x 5 rounds of one event each (the text is held, then flushed with the next
    // event): one transaction per stream would be at least 30.
    const used = transactions.count
    transactions.stop()
    assert.isBelow(used, 30, `${used} transactions for 30 event commits`)
    await Promise.all(writers.map((writer) => writer.end()))
    for (const [i, id] of ids.entries()) {
      const rows = await storedRows(sink, id)
      assertGapFree(assert, rows)
      const expected = [`s${i}:`]
      for (let n = 0; n < 5; n++) expected.push(`event ${i}.${n}`, `t${i}.${n} `)
      assert.deepEqual(
        rows
          .filter((row) => row.kind !== 'end')
          .map((row) =>
            row.kind === 'text' ? row.body : `event ${JSON.parse(row.body).event.title}`
          ),
        expected
      )
      assert.equal(rows.at(-1)!.kind, 'end')
      const frames = await readers[i]
      assert.equal(textOf(frames), expected.filter((e) => !e.startsWith('event ')).join(''))
      assert.deepEqual(
        frames.filter((f) => f.t === 'event').map((f: any) => f.event.title),
        Array.from({ length: 5 }, (_, n) => `${i}.${n}`)
      )
    }
  })

  test('a stream that is not open fails alone: the others in its group commit, it is unchanged', async ({
    assert,
  }) => {
    const { sink, db } = await setupSink()
    const { ids, writers } = await openTalking(sink, 4)
    const lost = ids[2]
    // Its lease was taken for lapsed elsewhere: the stream failed under its writer.
    await db.connection().from('agent_streams').where('run_id', lost).update({ status: 'failed' })
    const before = await db.connection().from('agent_streams').where('run_id', lost).first()
    const rowsBefore = await storedRows(sink, lost)
    const transactions = countTransactions(db)
    const settled = await round(writers, 0)
    transactions.stop()
    assert.equal(transactions.count, 1, 'the four appends went in one group')
    for (const [i, outcome] of settled.entries()) {
      if (i === 2) {
        assert.equal(outcome.status, 'rejected')
        assert.instanceOf((outcome as PromiseRejectedResult).reason, StreamClosedError)
      } else {
        assert.equal(outcome.status, 'fulfilled')
      }
    }
    const after = await db.connection().from('agent_streams').where('run_id', lost).first()
    assert.deepEqual(
      { seq: Number(after.last_seq), rev: Number(after.rev), status: after.status },
      { seq: Number(before.last_seq), rev: Number(before.rev), status: 'failed' }
    )
    assert.deepEqual(await storedRows(sink, lost), rowsBefore)
    for (const [i, id] of ids.entries()) {
      if (i === 2) continue
      await writers[i].end()
      const rows = await storedRows(sink, id)
      assertGapFree(assert, rows)
      assert.deepEqual(
        rows.map((row) => row.kind),
        ['text', 'event', 'end']
      )
    }
  })

  test('a group that fails for another reason is committed again stream by stream', async ({
    assert,
  }) => {
    const { sink } = await setupSink()
    const { ids, writers } = await openTalking(sink, 4)
    const fault = faultNextTransaction(sink, 'before', new Error('injected: not transient'))
    const settled = await round(writers, 0)
    assert.isTrue(fault.fired())
    assert.deepEqual(
      settled.map((s) => s.status),
      writers.map(() => 'fulfilled')
    )
    for (const [i, id] of ids.entries()) {
      await writers[i].end()
      const rows = await storedRows(sink, id)
      assertGapFree(assert, rows)
      assert.deepEqual(
        rows.map((row) => (row.kind === 'event' ? JSON.parse(row.body).event.title : row.kind)),
        ['text', `${i}.0`, 'end']
      )
    }
  })

  for (const when of ['before', 'after'] as const) {
    test(`a connection lost ${when} the group's COMMIT: each stream retried alone, none written twice`, async ({
      assert,
    }) => {
      const { sink, db } = await setupSink({ coalesceWindowMs: 20 })
      const { ids, writers } = await openTalking(sink, 5)
      const readers = ids.map((id) => collect(sink.subscribe(id)))
      // Held text in every stream, then an event each: text and event ride in one group.
      await Promise.all(writers.map((writer, i) => writer.write({ t: 'text', v: `held${i} ` })))
      const transactions = countTransactions(db)
      const fault = faultNextTransaction(sink, when, transient())
      const settled = await round(writers, 0)
      assert.isTrue(fault.fired())
      assert.deepEqual(
        settled.map((s) => s.status),
        writers.map(() => 'fulfilled')
      )
      await Promise.all(writers.map((writer, i) => writer.write({ t: 'text', v: `more${i}` })))
      await Promise.all(writers.map((writer) => writer.end()))
      transactions.stop()
      // The group, then one retry per stream (each finds out whether the group landed).
      assert.isAtLeast(transactions.count, 1 + ids.length)
      for (const [i, id] of ids.entries()) {
        const rows = await storedRows(sink, id)
        assertGapFree(assert, rows)
        assert.deepEqual(
          rows.map((row) => (row.kind === 'text' ? row.body : row.kind)),
          [`s${i}:held${i} `, 'event', `more${i}`, 'end']
        )
        const frames = await readers[i]
        assert.equal(textOf(frames), `s${i}:held${i} more${i}`)
        assert.lengthOf(
          frames.filter((f) => f.t === 'event'),
          1
        )
      }
    })
  }
})

test.group('Group commit | order under concurrent writers', () => {
  test('each writer keeps its order and every stream stays gap-free (property)', async ({
    assert,
  }) => {
    const { sink } = await setupSink({ coalesceWindowMs: 15 })
    // Per stream: a script of text pieces and events, and the pauses between writes; stream 0
    // also has a second writer (a delegated child on this replica) writing events.
    const step = fc.oneof(
      fc.record({ text: fc.stringMatching(/^[a-z]{1,4}$/) }),
      fc.record({ event: fc.constant(true) })
    )
    const script = fc.array(fc.tuple(step, fc.integer({ min: 0, max: 12 })), {
      minLength: 1,
      maxLength: 12,
    })
    await fc.assert(
      fc.asyncProperty(
        fc.array(script, { minLength: 2, maxLength: 5 }),
        fc.array(fc.integer({ min: 0, max: 12 }), { maxLength: 6 }),
        async (scripts, childPauses) => {
          const ids = scripts.map(() => runId('order'))
          const writers = await Promise.all(ids.map((id) => sink.open(id)))
          const child = await sink.open(ids[0])
          await Promise.all([
            ...scripts.map(async (steps, s) => {
              for (const [n, [what, pause]] of steps.entries()) {
                if ('text' in what) await writers[s].write({ t: 'text', v: what.text })
                else
                  await writers[s].write({
                    t: 'event',
                    event: { kind: 'title', title: `w${s}.${n}` },
                  })
                if (pause > 0) await sleep(pause)
              }
              await writers[s].flush()
            }),
            (async () => {
              for (const [n, pause] of childPauses.entries()) {
                await child.write({ t: 'event', event: { kind: 'title', title: `c.${n}` } })
                if (pause > 0) await sleep(pause)
              }
              child.release()
            })(),
          ])
          await Promise.all(writers.map((writer) => writer.end()))
          for (const [s, id] of ids.entries()) {
            const rows = await storedRows(sink, id)
            assertGapFree(assert, rows)
            const events = rows
              .filter((row) => row.kind === 'event')
              .map((row) => JSON.parse(row.body).event.title as string)
            const expectedText = scripts[s]
              .map(([what]) => ('text' in what ? what.text : ''))
              .join('')
            assert.equal(
              rows
                .filter((row) => row.kind === 'text')
                .map((row) => row.body)
                .join(''),
              expectedText
            )
            // This writer's events and text in the order written: the text before each event.
            const own = events.filter((title) => title.startsWith(`w${s}.`))
            assert.deepEqual(
              own,
              scripts[s].flatMap(([what], n) => ('event' in what ? [`w${s}.${n}`] : []))
            )
            let textSoFar = ''
            const textBefore = new Map<string, string>()
            for (const row of rows) {
              if (row.kind === 'text') textSoFar += row.body
              if (row.kind === 'event') textBefore.set(JSON.parse(row.body).event.title, textSoFar)
            }
            let written = ''
            for (const [n, [what]] of scripts[s].entries()) {
              if ('text' in what) written += what.text
              else assert.equal(textBefore.get(`w${s}.${n}`), written)
            }
            if (s === 0) {
              assert.deepEqual(
                events.filter((title) => title.startsWith('c.')),
                childPauses.map((_, n) => `c.${n}`)
              )
            }
            assert.equal(rows.at(-1)!.kind, 'end')
          }
        }
      ),
      { numRuns: 12 }
    )
  })
})

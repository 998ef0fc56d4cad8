import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import { setupParking } from './helpers/parking.js'
import { runId } from './helpers/sink.js'
import { installTracing } from './helpers/tracing.js'

/**
 * Issue 25, "a no-op without an SDK": a decision and the resume it unblocks read nothing for
 * spans when no tracer provider is registered (was: the run's stored trace context was read
 * back after every decision, expiry or cancel, and before every resume, with no SDK to use it).
 * Counted from Lucid's query events.
 */

/** Every SQL statement sent from now on. */
function recordStatements(db: Database) {
  const log: string[] = []
  const clients = new Set([db.connection().getReadClient(), db.connection().getWriteClient()])
  const listener = (query: { sql: string }) => log.push(query.sql)
  for (const client of clients) client.on('query', listener)
  return {
    log,
    stop: () => {
      for (const client of clients) client.off('query', listener)
    },
  }
}

/** A run parked on one approval, approved, resumed to its end: the statements of the decision on. */
async function decideAndResume() {
  const { driver, parking, db } = await setupParking({ steps: ['approval'] })
  const id = runId('untraced-reads')
  const person = { id: 'p-1' }
  await (
    await driver.start({ runId: id, principal: person })
  ).done
  const statements = recordStatements(db)
  await parking.decisions.approve(id, `${id}.call0`, { principal: person })
  await driver.settled()
  statements.stop()
  return statements.log.filter((sql) => /trace_context/i.test(sql))
}

test.group('Traces: nothing read for spans without an SDK', () => {
  test('a decision and its resume read no trace context without an SDK', async ({ assert }) => {
    assert.deepEqual(await decideAndResume(), [])
  })

  test('with an SDK they read it (the park span and the resumed segment need it)', async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    assert.isAtLeast((await decideAndResume()).length, 2)
  })
})

/**
 * The official Durable Streams conformance suite (`@durable-streams/server-conformance-tests`,
 * a Vitest suite) against the package's Durable Streams door on the suite's database (`DB`:
 * sqlite, pg, mysql), served on loopback by one transport (`DS_TRANSPORT`): `fetch` (default,
 * `createDurableStreamsFetchHandler` on `node:http`) or `adonis` (the AdonisJS routes of
 * `registerRoutes`, `<prefix>/ds`). Run by scripts/test_durable_streams_conformance.mjs (never
 * by Japa: it is not a `.spec.ts`); tests/durable_streams_conformance.spec.ts runs that script.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll } from 'vitest'
import { runConformanceTests } from '@durable-streams/server-conformance-tests'
import type { Database } from '@adonisjs/lucid/database'
import { createDurableStreamsFetchHandler } from '../../src/http/durable_streams_fetch_handler.js'
import { LucidTokenStreamSink } from '../../src/sink/lucid_sink.js'
import { createDatabase, resetTables } from './db.js'
import { toNode } from './fetch_node.js'

/** The suite's long-poll wait; the door's long-poll timeout is this too. */
const LONG_POLL_MS = 500

const options = { baseUrl: '', longPollTimeoutMs: LONG_POLL_MS, subscriptions: true }

/** Subscriptions on, with the suite's webhook receiver on loopback (development URLs). */
const SUBSCRIPTIONS = { secret: 'conformance-suite-secret', localWebhooks: true, sweepMs: 200 }
let close: () => Promise<void> = async () => {}

beforeAll(async () => {
  if (process.env.DS_TRANSPORT === 'adonis') {
    const { serveAdonis } = await import('./durable_streams_adonis.js')
    const served = await serveAdonis({
      longPollTimeoutMs: LONG_POLL_MS,
      subscriptions: SUBSCRIPTIONS,
    })
    options.baseUrl = served.baseUrl
    close = served.close
    return
  }
  const db: Database = createDatabase()
  await resetTables(db)
  const sink = new LucidTokenStreamSink(db, {})
  const handler = createDurableStreamsFetchHandler(sink, {
    basePath: '/ds',
    longPollTimeoutMs: LONG_POLL_MS,
    subscriptions: SUBSCRIPTIONS,
  })
  const server: Server = createServer(toNode(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  options.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ds`
  close = async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await sink.shutdown()
    await db.manager.closeAll()
  }
}, 60_000)

afterAll(() => close(), 60_000)

runConformanceTests(options)

#!/usr/bin/env node
/**
 * `npm run test:durable-streams`: the official Durable Streams conformance suite
 * (`@durable-streams/server-conformance-tests`, a Vitest suite; its packaged CLI runs no test
 * when installed) against the package's Durable Streams door on the database named by `DB`
 * (sqlite, the default; pg; mysql), through tests/helpers/db.ts's connection (PG_DATABASE,
 * MYSQL_DATABASE, SQLITE_FILE ... as for the Japa suite), served by `DS_TRANSPORT` (`fetch`, the
 * default, or `adonis`). Prints every failed test (`FAILED <name>`) and one closing line,
 * `durable streams conformance (DB, TRANSPORT): N passed, N failed, N skipped`, and exits
 * non-zero when a test failed or none ran.
 */
import { runVitestSuite } from './vitest_suite.mjs'

// 15 s a test (the suite's own is 5 s): this shared 2-core machine is slow at times.
await runVitestSuite({
  file: 'tests/helpers/durable_streams_conformance.ts',
  label: `durable streams conformance (${process.env.DB ?? 'sqlite'}, ${process.env.DS_TRANSPORT ?? 'fetch'})`,
  testTimeout: 15_000,
})

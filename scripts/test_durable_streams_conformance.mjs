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
import { fileURLToPath } from 'node:url'
import { startVitest } from 'vitest/node'

const root = fileURLToPath(new URL('..', import.meta.url))
const file = 'tests/helpers/durable_streams_conformance.ts'
const vitest = await startVitest('test', [file], {
  root,
  config: false,
  globals: true,
  include: [file],
  watch: false,
  fileParallelism: false,
  testTimeout: 15_000,
  hookTimeout: 30_000,
  // Quiet unless asked (VALIDATION_REPORTER=default): the failures are printed below.
  reporters: process.env.VALIDATION_REPORTER ? [process.env.VALIDATION_REPORTER] : [{}],
})
const counts = { passed: 0, failed: 0, skipped: 0 }
for (const module of vitest?.state.getTestModules() ?? []) {
  for (const test of module.children.allTests()) {
    const state = test.result().state
    if (state === 'passed') counts.passed += 1
    else if (state === 'failed') {
      counts.failed += 1
      console.error(`FAILED ${test.fullName}`)
      for (const error of test.result().errors ?? []) console.error(`  ${error.message}`)
    } else counts.skipped += 1
  }
  // A module that failed before running a test (an import, a beforeAll) counts as a failure.
  for (const error of module.errors()) {
    counts.failed += 1
    console.error(`FAILED ${module.moduleId}: ${error.message}`)
  }
}
await vitest?.close()
console.log(
  `durable streams conformance (${process.env.DB ?? 'sqlite'}, ${process.env.DS_TRANSPORT ?? 'fetch'}): ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`
)
process.exit(counts.failed > 0 || counts.passed === 0 ? 1 : 0)

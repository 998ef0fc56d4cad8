/**
 * Run a third party's Vitest suite (a conformance or validation suite the package is scored by)
 * from one file of ours, count its tests, and exit: every failed test printed (`FAILED <name>`
 * and its errors), then one closing line, `<label>: N passed, N failed, N skipped`; the exit code
 * is non-zero when a test failed or none ran. Quiet unless `VALIDATION_REPORTER` names a Vitest
 * reporter. Used by scripts/test_langgraph_checkpointer.mjs and
 * scripts/test_durable_streams_conformance.mjs.
 */
import { fileURLToPath } from 'node:url'
import { startVitest } from 'vitest/node'

export async function runVitestSuite({ file, label, testTimeout }) {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const vitest = await startVitest('test', [file], {
    root,
    config: false,
    globals: true,
    include: [file],
    watch: false,
    fileParallelism: false,
    testTimeout,
    hookTimeout: 30_000,
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
    `${label}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`
  )
  process.exit(counts.failed > 0 || counts.passed === 0 ? 1 : 0)
}

import { assert } from '@japa/assert'
import { fileSystem } from '@japa/file-system'
import { configure, processCLIArgs, run } from '@japa/runner'
import { progressFile } from '../tests/helpers/progress.js'

/*
 * An unhandled rejection anywhere in the run fails it: Japa's runner records each one while
 * tests run, prints it after the summary and exits 1 (tests/suite_rejections.spec.ts pins
 * this). A spec never installs a process-level `unhandledRejection` listener; a test that
 * expects a client to reject awaits or catches that promise.
 *
 * tests/fixtures/ holds the fixture projects some specs run this file in (their own
 * `tests/**` below their folder), never part of this suite.
 *
 * `TEST_PROGRESS_FILE` (set by scripts/test_all.mjs) names a file kept holding where the run is
 * (file, group, test, phase), so the watchdog that kills an overlong run can say what hung.
 */
processCLIArgs(process.argv.slice(2))
configure({
  files: ['tests/**/*.spec.ts'],
  exclude: ['node_modules/**', '.git/**', 'coverage/**', 'tests/fixtures/**'],
  plugins: [
    assert(),
    fileSystem({ autoClean: true }),
    ...(process.env.TEST_PROGRESS_FILE ? [progressFile(process.env.TEST_PROGRESS_FILE)] : []),
  ],
  forceExit: true,
  timeout: 30_000,
})
await run()

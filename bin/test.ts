import { assert } from '@japa/assert'
import { fileSystem } from '@japa/file-system'
import { configure, processCLIArgs, run } from '@japa/runner'
import { progressFile } from '../tests/helpers/progress.js'
import { SQLITE_ONLY } from '../tests/sqlite_only.js'

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
 *
 * With `DB=pg` or `DB=mysql` the whole suite leaves out the spec files whose behaviour does not
 * depend on the database (tests/sqlite_only.ts: the one list, each with its reason); they run
 * with `DB=sqlite`. A file named with `--files`, or `EVERY_SPEC=1`, runs on any database.
 */
const args = process.argv.slice(2)
const named = args.some((arg) => arg === '--files' || arg.startsWith('--files='))
const once =
  (process.env.DB ?? 'sqlite') !== 'sqlite' && !named && process.env.EVERY_SPEC !== '1'
    ? Object.keys(SQLITE_ONLY)
    : []
if (once.length > 0) {
  console.log(`${once.length} spec files run with DB=sqlite only (tests/sqlite_only.ts)`)
}
processCLIArgs(args)
configure({
  files: ['tests/**/*.spec.ts'],
  exclude: ['node_modules/**', '.git/**', 'coverage/**', 'tests/fixtures/**', ...once],
  plugins: [
    assert(),
    fileSystem({ autoClean: true }),
    ...(process.env.TEST_PROGRESS_FILE ? [progressFile(process.env.TEST_PROGRESS_FILE)] : []),
  ],
  forceExit: true,
  timeout: 30_000,
})
await run()
